package rules

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
)

// The labels a sentence gets.
const (
	LabelNot    = 0 // anything else: a task, a question, a report, quoted text...
	LabelRule   = 1 // a standing rule about how to work
	LabelRevoke = 2 // cancels an earlier rule without stating a new one
	LabelRevise = 3 // a rule that replaces an earlier one ("from now on ...", "actually, ...")
	nClass      = 4
)

// LabelName names a label as the labelled set writes it (a revision is a
// rule of kind revision there).
var LabelName = [nClass]string{"not", "rule", "revoke", "revise"}

// A Model is a linear classifier over hashed sentence features: one weight
// per feature and label, a softmax over the sums.
type Model struct {
	table table // the weights by feature: open addressing, faster than a map
	cache *classCache
	// Threshold is the probability of Rule from which a sentence is a rule
	// (chosen by cross-validation on the training part of the set).
	Threshold float32
}

//go:embed model.bin
var modelBin []byte

// Default is the embedded model, trained by `go generate` from
// testdata/labelled (the training part: a quarter of the groups is kept
// back for measuring).
var Default = sync.OnceValue(func() *Model {
	m, err := Decode(modelBin)
	if err != nil {
		panic("rules: embedded model: " + err.Error())
	}
	return m
})

// Scores are a sentence's probabilities by label.
type Scores [nClass]float32

// Predict scores the features of one sentence. Every feature counts
// 1/sqrt(n) of a sentence of n features, so a long sentence does not
// weigh more than a short one.
func (m *Model) Predict(ids []uint32) Scores {
	var z [nClass]float64
	x := featureValue(len(ids))
	for _, id := range ids {
		if w := m.table.get(id); w != nil {
			for c := range z {
				z[c] += float64(w[c]) * x
			}
		}
	}
	return softmax(z)
}

// table is an open-addressing hash table of the weights (linear probing,
// a power-of-two size at least twice the count). Id 0 is the empty slot;
// a feature hashed to 0 is kept in zero.
type table struct {
	keys []uint32
	vals [][nClass]float32
	zero *[nClass]float32
	mask uint32
	n    int // features held
}

func newTable(w map[uint32][nClass]float32) table {
	t := makeTable(len(w))
	for id, v := range w {
		t.put(id, v)
	}
	return t
}

// makeTable is an empty table for n features.
func makeTable(n int) table {
	size := uint32(16)
	for size < uint32(2*n) {
		size *= 2
	}
	return table{keys: make([]uint32, size), vals: make([][nClass]float32, size), mask: size - 1}
}

// put adds a feature (a repeated id replaces its weights).
func (t *table) put(id uint32, v [nClass]float32) {
	if id == 0 {
		if t.zero == nil {
			t.n++
		}
		t.zero = &v
		return
	}
	i := (id * 2654435761) & t.mask
	for t.keys[i] != 0 && t.keys[i] != id {
		i = (i + 1) & t.mask
	}
	if t.keys[i] == 0 {
		t.n++
	}
	t.keys[i], t.vals[i] = id, v
}

// each calls fn with every feature.
func (t *table) each(fn func(id uint32, w *[nClass]float32)) {
	if t.zero != nil {
		fn(0, t.zero)
	}
	for i, k := range t.keys {
		if k != 0 {
			fn(k, &t.vals[i])
		}
	}
}

func (t *table) get(id uint32) *[nClass]float32 {
	if id == 0 {
		return t.zero
	}
	for i := (id * 2654435761) & t.mask; ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case id:
			return &t.vals[i]
		case 0:
			return nil
		}
	}
}

func featureValue(n int) float64 { return 1 / math.Sqrt(float64(max(n, 1))) }

// Rule is the probability that the sentence is a rule, a revision or not.
func (s Scores) Rule() float32 { return s[LabelRule] + s[LabelRevise] }

// Label is the decision for scores: Revoke when it is the likeliest;
// from the threshold on a rule, Revise when a revision is likelier than a
// plain rule; Not otherwise.
func (m *Model) Label(s Scores) int {
	switch {
	case s[LabelRevoke] > s.Rule() && s[LabelRevoke] > s[LabelNot]:
		return LabelRevoke
	case s.Rule() >= m.Threshold && s[LabelRevise] > s[LabelRule]:
		return LabelRevise
	case s.Rule() >= m.Threshold:
		return LabelRule
	}
	return LabelNot
}

// IsRule reports whether a label lists the sentence as a rule.
func IsRule(label int) bool { return label == LabelRule || label == LabelRevise }

func softmax(z [nClass]float64) Scores {
	mx := z[0]
	for _, v := range z[1:] {
		mx = math.Max(mx, v)
	}
	var sum float64
	var e [nClass]float64
	for c := range z {
		e[c] = math.Exp(z[c] - mx)
		sum += e[c]
	}
	var s Scores
	for c := range e {
		s[c] = float32(e[c] / sum)
	}
	return s
}

// The model file: "PIRULES1", the threshold (float32), a weight scale
// (float32), the number of features (uint32), then per feature in
// increasing id order the id's delta (uvarint) and one int16 per label
// (weight = value * scale). Little endian.
const magic = "PIRULES1"

// Encode writes the model in its file format; the same model gives the
// same bytes.
func (m *Model) Encode() []byte {
	ids := make([]uint32, 0, m.table.n)
	maxW := float32(0)
	m.table.each(func(id uint32, w *[nClass]float32) {
		ids = append(ids, id)
		for _, v := range w {
			maxW = max(maxW, float32(math.Abs(float64(v))))
		}
	})
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	scale := maxW / 32767
	if scale == 0 {
		scale = 1
	}
	var b bytes.Buffer
	b.WriteString(magic)
	binary.Write(&b, binary.LittleEndian, m.Threshold)
	binary.Write(&b, binary.LittleEndian, scale)
	binary.Write(&b, binary.LittleEndian, uint32(len(ids)))
	prev := uint32(0)
	var tmp [binary.MaxVarintLen32]byte
	for _, id := range ids {
		n := binary.PutUvarint(tmp[:], uint64(id-prev))
		b.Write(tmp[:n])
		prev = id
		for _, v := range m.table.get(id) {
			q := math.Round(float64(v / scale))
			binary.Write(&b, binary.LittleEndian, int16(max(min(q, 32767), -32767)))
		}
	}
	return b.Bytes()
}

// Decode reads a model file.
func Decode(data []byte) (*Model, error) {
	if !bytes.HasPrefix(data, []byte(magic)) {
		return nil, errors.New("rules: model: not a model file (no PIRULES1 header)")
	}
	p := data[len(magic):]
	if len(p) < 12 {
		return nil, fmt.Errorf("rules: model: header: %w", io.ErrUnexpectedEOF)
	}
	thr := math.Float32frombits(binary.LittleEndian.Uint32(p))
	scale := math.Float32frombits(binary.LittleEndian.Uint32(p[4:]))
	n := binary.LittleEndian.Uint32(p[8:])
	p = p[12:]
	if int64(n)*7 > int64(len(data)) {
		return nil, fmt.Errorf("rules: model: %d features do not fit in %d bytes", n, len(data))
	}
	m := &Model{Threshold: thr, cache: &classCache{}}
	m.table = makeTable(int(n))
	id := uint32(0)
	for i := uint32(0); i < n; i++ {
		d, k := binary.Uvarint(p)
		if k <= 0 {
			return nil, fmt.Errorf("rules: model: feature %d: a bad id", i)
		}
		p = p[k:]
		if len(p) < 2*nClass {
			return nil, fmt.Errorf("rules: model: feature %d: %w", i, io.ErrUnexpectedEOF)
		}
		id += uint32(d)
		var w [nClass]float32
		for c := range w {
			w[c] = float32(int16(binary.LittleEndian.Uint16(p[2*c:]))) * scale
		}
		p = p[2*nClass:]
		m.table.put(id, w)
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("rules: model: %d bytes after the last feature", len(p))
	}
	return m, nil
}

// Len is the number of features with weights.
func (m *Model) Len() int { return m.table.n }
