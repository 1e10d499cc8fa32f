package rules

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// An Example is one labelled sentence of the set in testdata/labelled.
type Example struct {
	ID     string `json:"id"`
	Lang   string `json:"lang"`
	Group  string `json:"group"`
	Source string `json:"source"`
	Label  string `json:"label"` // rule, not or revoke
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Lead   string `json:"lead"`
}

// Class is the example's label as a number: a rule of kind revision is
// LabelRevise.
func (e Example) Class() int {
	switch e.Label {
	case "not":
		return LabelNot
	case "rule":
		if e.Kind == "revision" {
			return LabelRevise
		}
		return LabelRule
	case "revoke":
		return LabelRevoke
	}
	return -1
}

// HeldOut reports whether a group is in the quarter of the set kept back
// from training, for measuring: chosen by a hash of the group's name, so
// no one picks it.
func HeldOut(group string) bool {
	h := fnv.New32a()
	h.Write([]byte(group))
	return h.Sum32()%4 == 0
}

// ParseSet reads one file of the labelled set (JSON lines). Every line
// must be an object with id, lang, group, label (rule, not, revoke) and
// text; an error names the file, the line and the field.
func ParseSet(name string, data []byte) ([]Example, error) {
	var out []Example
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var e Example
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("rules: %s:%d: %v", name, line, err)
		}
		for _, f := range []struct{ name, v string }{{"id", e.ID}, {"lang", e.Lang}, {"group", e.Group}, {"text", e.Text}} {
			if strings.TrimSpace(f.v) == "" {
				return nil, fmt.Errorf("rules: %s:%d: field %q is missing or empty", name, line, f.name)
			}
		}
		if e.Class() < 0 {
			return nil, fmt.Errorf("rules: %s:%d: field \"label\": %q is not rule, not or revoke", name, line, e.Label)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("rules: %s:%d: %v", name, line+1, err)
	}
	return out, nil
}

// LoadSet reads every *.jsonl file of dir, in name order; ids must be
// unique across them.
func LoadSet(dir string) ([]Example, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Example
	seen := map[string]string{}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		}
		ex, err := ParseSet(filepath.Base(n), data)
		if err != nil {
			return nil, err
		}
		for _, e := range ex {
			if prev, dup := seen[e.ID]; dup {
				return nil, fmt.Errorf("rules: %s: id %q is also in %s", filepath.Base(n), e.ID, prev)
			}
			seen[e.ID] = filepath.Base(n)
		}
		out = append(out, ex...)
	}
	return out, nil
}

// TrainOptions tune Train.
type TrainOptions struct {
	Epochs int     // passes over the data (default 20)
	L2     float64 // weight decay per update (default 1e-4)
	Rate   float64 // AdaGrad's base rate (default 0.2)
	Seed   uint64  // the shuffle's seed: the same seed, the same model
	Folds  int     // cross-validation folds choosing the threshold (default 4; 1: no CV, threshold 0.5)
	// MinGroups drops features seen in fewer groups of the set (default
	// 2): a feature of one document only is its topic, not how rules are
	// said.
	MinGroups int
	// Balance weighs the classes: each example by (n/(classes*count))^Balance
	// of its class (default 0: none; 1 gives every class the same total).
	Balance float64
	// Beta is the F-measure the threshold maximizes on the folds (default
	// 1.5: recall counts more than precision, a lost rule costing more
	// than an extra line).
	Beta float64

	defaulted bool
}

func (o *TrainOptions) defaults() {
	if o.defaulted {
		return
	}
	o.defaulted = true
	if o.Epochs == 0 {
		o.Epochs = 20
	}
	if o.L2 == 0 {
		o.L2 = 1e-4
	}
	if o.Rate == 0 {
		o.Rate = 0.2
	}
	if o.Folds == 0 {
		o.Folds = 4
	}
	if o.MinGroups == 0 {
		o.MinGroups = 2
	}
	if o.Balance < 0 {
		o.Balance = 0
	}
	if o.Beta == 0 {
		o.Beta = 1.5
	}
}

// sample is one example ready for training.
type sample struct {
	ids   []uint32 // hashed features
	class int
	group string
	w     float64
}

func samplesOf(ex []Example) []sample {
	out := make([]sample, len(ex))
	for i, e := range ex {
		out[i] = sample{ids: Features(e.Text, e.Lead), class: e.Class(), group: e.Group}
	}
	return out
}

// Train fits a model to the examples: multinomial logistic regression by
// AdaGrad, deterministic for a seed. The threshold is chosen on
// cross-validation folds split by group.
func Train(ex []Example, opt TrainOptions) *Model {
	return trainSamples(samplesOf(ex), opt)
}

func trainSamples(samples []sample, opt TrainOptions) *Model {
	opt.defaults()
	m := fit(samples, opt)
	m.Threshold = 0.5
	if opt.Folds > 1 {
		m.Threshold = chooseThreshold(samples, opt)
	}
	return m
}

// weigh sets each sample's class weight.
func weigh(s []sample, balance float64) {
	var count [nClass]float64
	for _, x := range s {
		count[x.class]++
	}
	for i := range s {
		s[i].w = math.Pow(float64(len(s))/(float64(nClass)*math.Max(count[s[i].class], 1)), balance)
	}
}

func fit(in []sample, opt TrainOptions) *Model {
	samples := append([]sample(nil), in...)
	weigh(samples, opt.Balance)
	// Dense feature indices, for the features of enough groups.
	groups := map[uint32]map[string]bool{}
	for _, s := range samples {
		for _, id := range s.ids {
			g := groups[id]
			if g == nil {
				g = map[string]bool{}
				groups[id] = g
			}
			g[s.group] = true
		}
	}
	index := map[uint32]int32{}
	var ids []uint32
	for id, g := range groups {
		if len(g) >= opt.MinGroups || id == biasID {
			index[id] = 0
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for i, id := range ids {
		index[id] = int32(i)
	}
	dense := make([][]int32, len(samples))
	for k, s := range samples {
		for _, id := range s.ids {
			if i, ok := index[id]; ok {
				dense[k] = append(dense[k], i)
			}
		}
	}
	w := make([]float64, len(ids)*nClass)
	g2 := make([]float64, len(ids)*nClass)
	order := make([]int, len(samples))
	for i := range order {
		order[i] = i
	}
	r := rand.New(rand.NewPCG(opt.Seed, 0x5eed))
	for epoch := 0; epoch < opt.Epochs; epoch++ {
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, k := range order {
			s := samples[k]
			x := featureValue(len(s.ids))
			var z [nClass]float64
			for _, i := range dense[k] {
				for c := range z {
					z[c] += w[int(i)*nClass+c] * x
				}
			}
			p := softmax(z)
			for _, i := range dense[k] {
				for c := range z {
					y := 0.0
					if c == s.class {
						y = 1
					}
					j := int(i)*nClass + c
					g := s.w*(float64(p[c])-y)*x + opt.L2*w[j]
					g2[j] += g * g
					w[j] -= opt.Rate * g / (math.Sqrt(g2[j]) + 1e-8)
				}
			}
		}
	}
	weights := make(map[uint32][nClass]float32, len(ids))
	m := &Model{}
	for i, id := range ids {
		big := false
		var f [nClass]float32
		for c := 0; c < nClass; c++ {
			v := w[i*nClass+c]
			f[c] = float32(v)
			if math.Abs(v) >= 1e-3 {
				big = true
			}
		}
		if big {
			weights[id] = f
		}
	}
	m.table = newTable(weights)
	m.cache = &classCache{}
	return m
}

// biasID is the feature every sentence has.
var biasID = func() uint32 {
	var f featureSet
	f.add("bias")
	return f.ids[0]
}()

// CV measures training options by cross-validation on ex, split by
// group into folds: trained on all folds but one, scored on that one.
// It reports rule precision and recall at the threshold Train would
// choose, and how many sentences taken for revocations are not.
func CV(ex []Example, opt TrainOptions) (precision, recall float64, revokes, falseRevokes int) {
	return cvSamples(samplesOf(ex), opt)
}

// OutOfFold is one example's score from the fold model that did not see
// it.
type OutOfFold struct {
	Example Example
	Scores  Scores
	Label   int // the fold model's decision at its own threshold
}

// CVScores scores every example with the fold model that left its group
// out (folds as CV splits them), for curves and error lists.
func CVScores(ex []Example, opt TrainOptions) []OutOfFold {
	opt.defaults()
	all := samplesOf(ex)
	out := make([]OutOfFold, len(ex))
	for k := 0; k < opt.Folds; k++ {
		var train []sample
		var test []int
		for i, s := range all {
			if foldOf("cv:", s.group, opt.Folds) == k {
				test = append(test, i)
			} else {
				train = append(train, s)
			}
		}
		m := trainSamples(train, opt)
		for _, i := range test {
			sc := m.Predict(all[i].ids)
			out[i] = OutOfFold{Example: ex[i], Scores: sc, Label: m.Label(sc)}
		}
	}
	return out
}

// CVSet is CV with the features computed once for many runs.
type CVSet struct{ samples []sample }

// NewCVSet prepares examples for CV runs.
func NewCVSet(ex []Example) *CVSet { return &CVSet{samplesOf(ex)} }

// Run is CV on the prepared set.
func (c *CVSet) Run(opt TrainOptions) (precision, recall float64, revokes, falseRevokes int) {
	return cvSamples(c.samples, opt)
}

func cvSamples(all []sample, opt TrainOptions) (precision, recall float64, revokes, falseRevokes int) {
	opt.defaults()
	folds := opt.Folds
	var tp, fp, fn float64
	for k := 0; k < folds; k++ {
		var train, test []sample
		for _, s := range all {
			if foldOf("cv:", s.group, folds) == k {
				test = append(test, s)
			} else {
				train = append(train, s)
			}
		}
		m := trainSamples(train, opt)
		for _, s := range test {
			got := m.Label(m.Predict(s.ids))
			want := IsRule(s.class)
			switch {
			case IsRule(got) && want:
				tp++
			case IsRule(got):
				fp++
			case want:
				fn++
			}
			if got == LabelRevoke {
				revokes++
				if s.class != LabelRevoke {
					falseRevokes++
				}
			}
		}
	}
	return tp / math.Max(tp+fp, 1), tp / math.Max(tp+fn, 1), revokes, falseRevokes
}

func foldOf(salt, group string, folds int) int {
	h := fnv.New32a()
	h.Write([]byte(salt + group))
	return int(h.Sum32() % uint32(folds))
}

// chooseThreshold trains on all folds but one, scores the one left out,
// and picks the rule threshold that maximizes the F-measure of opt.Beta
// on the pooled scores.
func chooseThreshold(samples []sample, opt TrainOptions) float32 {
	type scored struct {
		p    float32
		rule bool
	}
	var pooled []scored
	for k := 0; k < opt.Folds; k++ {
		var train, test []sample
		for _, s := range samples {
			if foldOf("fold:", s.group, opt.Folds) == k {
				test = append(test, s)
			} else {
				train = append(train, s)
			}
		}
		if len(test) == 0 || len(train) == 0 {
			continue
		}
		m := fit(train, opt)
		for _, s := range test {
			sc := m.Predict(s.ids)
			p := sc.Rule()
			if sc[LabelRevoke] > p && sc[LabelRevoke] > sc[LabelNot] {
				p = 0
			}
			pooled = append(pooled, scored{p: p, rule: IsRule(s.class)})
		}
	}
	b2 := opt.Beta * opt.Beta
	best, bestF := float32(0.5), -1.0
	for t := float32(0.05); t < 0.951; t += 0.01 {
		var tp, fp, fn float64
		for _, s := range pooled {
			switch {
			case s.p >= t && s.rule:
				tp++
			case s.p >= t:
				fp++
			case s.rule:
				fn++
			}
		}
		if tp == 0 {
			continue
		}
		p, r := tp/(tp+fp), tp/(tp+fn)
		if f := (1 + b2) * p * r / (b2*p + r); f > bestF {
			best, bestF = t, f
		}
	}
	return best
}

// TrainingPart is the examples whose group is not held out.
func TrainingPart(ex []Example) []Example {
	var out []Example
	for _, e := range ex {
		if !HeldOut(e.Group) {
			out = append(out, e)
		}
	}
	return out
}
