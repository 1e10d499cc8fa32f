package relay

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// The index's storage is a few large arrays without pointers: the garbage
// collector has nothing to scan in them, and a build allocates a handful of
// growing arrays instead of a string and a slice per term.

// termDict maps terms to dense ids and keeps, per term, where its bytes
// and its postings are. The terms are stored end to end in one byte arena
// and found through an open-addressing table of hash tags. A term's bytes
// and its posting state share one record, so adding a posting for a term
// just looked up touches memory already in the processor's cache.
type termDict struct {
	slots []dictSlot
	arena []byte // the terms, end to end
	terms []termInfo
	post  postingPool
}

// termInfo is what the index keeps per term.
type termInfo struct {
	off     uint32 // its bytes: arena[off:off+n]
	n       uint8
	level   uint8  // its current posting block's size: minBlock << level
	head    uint32 // its first posting block
	pos     uint32 // where its next posting byte goes
	end     uint32 // where its current block's next-block address goes
	lastDoc int32  // its last document
}

// dictSlot is one place of the table: a term's id, a tag of its hash and
// its length, and its first 8 bytes, so that a term of up to 8 bytes (most
// words) is recognized without reading its bytes from the arena.
type dictSlot struct {
	meta uint64 // the hash's high 24 bits, the length (8 bits) << 32 | id + 1; 0 is free
	key  uint64 // the term's first 8 bytes, little-endian, zero-padded
}

func newTermDict() termDict {
	return termDict{slots: make([]dictSlot, 1<<10)}
}

// slotKey returns the tag and the first 8 bytes of a term.
func slotKey(t []byte, h uint64) (tag, key uint64) {
	tag = h>>40<<8 | uint64(min(len(t), 255))
	if len(t) >= 8 {
		return tag, binary.LittleEndian.Uint64(t)
	}
	for i, c := range t {
		key |= uint64(c) << (8 * i)
	}
	return tag, key
}

// count is the number of terms.
func (d *termDict) count() int { return len(d.terms) }

// term returns the bytes of term id (not to be modified).
func (d *termDict) term(id int32) []byte {
	t := &d.terms[id]
	return d.arena[t.off : t.off+uint32(t.n)]
}

// hashTerm hashes a term of up to a few dozen bytes, eight at a time.
func hashTerm(b []byte) uint64 {
	const m1, m2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9
	h := uint64(len(b)) * m1
	for len(b) >= 8 {
		h = bits.RotateLeft64((h^binary.LittleEndian.Uint64(b))*m2, 31)
		b = b[8:]
	}
	if len(b) > 0 {
		var w uint64
		for i, c := range b {
			w |= uint64(c) << (8 * i)
		}
		h = bits.RotateLeft64((h^w)*m2, 31)
	}
	// murmur3's finalizer: every bit of the input reaches the low bits
	// (the slot) and the high bits (the tag).
	h ^= h >> 33
	h *= 0xFF51AFD7ED558CCD
	h ^= h >> 33
	h *= 0xC4CEB9FE1A85EC53
	h ^= h >> 33
	return h
}

// find returns the id of term t (whose hash is h), or -1.
func (d *termDict) find(t []byte, h uint64) int32 {
	id, _ := d.lookup(t, h)
	return id
}

// lookup returns the id of term t (whose hash is h), or -1 and the free
// slot where it goes.
func (d *termDict) lookup(t []byte, h uint64) (int32, uint64) {
	mask := uint64(len(d.slots) - 1)
	tag, key := slotKey(t, h)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &d.slots[i]
		if s.meta == 0 {
			return -1, i
		}
		if s.meta>>32 == tag && s.key == key {
			id := int32(uint32(s.meta) - 1)
			if len(t) <= 8 || bytes.Equal(d.term(id), t) {
				return id, i
			}
		}
	}
}

// intern returns the id of term t (whose hash is h), adding it if new.
func (d *termDict) intern(t []byte, h uint64) int32 {
	id, i := d.lookup(t, h)
	if id >= 0 {
		return id
	}
	id = int32(d.count())
	head := d.post.alloc(minBlock)
	d.terms = append(d.terms, termInfo{off: uint32(len(d.arena)), n: uint8(len(t)), head: head, pos: head, end: head + minBlock - 4, lastDoc: -1})
	d.arena = append(d.arena, t...)
	tag, key := slotKey(t, h)
	d.slots[i] = dictSlot{meta: tag<<32 | uint64(id+1), key: key}
	if d.count()*10 > len(d.slots)*7 {
		d.grow()
	}
	return id
}

// grow doubles the table, placing each term again by its hash.
func (d *termDict) grow() {
	slots := make([]dictSlot, 2*len(d.slots))
	mask := uint64(len(slots) - 1)
	for _, s := range d.slots {
		if s.meta == 0 {
			continue
		}
		h := hashTerm(d.term(int32(uint32(s.meta) - 1)))
		i := h & mask
		for slots[i].meta != 0 {
			i = (i + 1) & mask
		}
		slots[i] = s
	}
	d.slots = slots
}

// postingPool holds the postings of every term: for each document holding
// the term, the uvarint distance to its previous document and the uvarint
// count of the term in it. A term's postings are a chain of blocks in
// fixed pages, each block twice as large as the one before (up to
// minBlock << maxLevel), its last 4 bytes the address of the next; an
// address is the page << pageBits | the offset in it. Appending never
// copies. The chain's state is in the term's termInfo.
type postingPool struct {
	pages [][]byte
	used  int // bytes used of the last page
}

const (
	pageBits = 16
	pageSize = 1 << pageBits
	minBlock = 8
	maxLevel = 7 // blocks of up to 1 KiB
)

// alloc returns the address of n fresh bytes in one page.
func (p *postingPool) alloc(n int) uint32 {
	if len(p.pages) == 0 || p.used+n > pageSize {
		p.pages = append(p.pages, make([]byte, pageSize))
		p.used = 0
	}
	a := uint32(len(p.pages)-1)<<pageBits | uint32(p.used)
	p.used += n
	return a
}

// add appends document doc, holding term t tf times, to t's postings.
func (p *postingPool) add(t *termInfo, doc int32, tf uint32) {
	var buf [2 * binary.MaxVarintLen32]byte
	n := binary.PutUvarint(buf[:], uint64(doc-t.lastDoc))
	n += binary.PutUvarint(buf[n:], uint64(tf))
	t.lastDoc = doc
	pos := t.pos
	for _, c := range buf[:n] {
		if pos == t.end {
			// The block is full: chain a larger one.
			lvl := min(t.level+1, maxLevel)
			size := minBlock << lvl
			next := p.alloc(size)
			binary.LittleEndian.PutUint32(p.pages[pos>>pageBits][pos&(pageSize-1):], next)
			pos = next
			t.end, t.level = next+uint32(size)-4, lvl
		}
		p.pages[pos>>pageBits][pos&(pageSize-1)] = c
		pos++
	}
	t.pos = pos
}

// each calls fn with each document of t's postings and t's count in it, in
// document order.
func (p *postingPool) each(t *termInfo, fn func(doc int32, tf uint32)) {
	pos, stop := t.head, t.pos
	end := pos + minBlock - 4
	lvl := uint8(0)
	next := func() byte {
		if pos == end {
			pos = binary.LittleEndian.Uint32(p.pages[pos>>pageBits][pos&(pageSize-1):])
			lvl = min(lvl+1, maxLevel)
			end = pos + uint32(minBlock<<lvl) - 4
		}
		c := p.pages[pos>>pageBits][pos&(pageSize-1)]
		pos++
		return c
	}
	uvarint := func() uint64 {
		var x uint64
		for s := uint(0); ; s += 7 {
			c := next()
			if c < 0x80 {
				return x | uint64(c)<<s
			}
			x |= uint64(c&0x7f) << s
		}
	}
	doc := int32(-1)
	for pos != stop {
		doc += int32(uvarint())
		fn(doc, uint32(uvarint()))
	}
}

// bytes is the memory the dictionary and the postings hold.
func (d *termDict) bytes() int {
	return len(d.post.pages)*pageSize + cap(d.arena) + 24*cap(d.terms) + 16*len(d.slots)
}

// docTerms counts the terms of the document being added: each term's
// count, found by hash in a small table that stays in the processor's
// cache, so the dictionary is looked up once per distinct term of the
// document rather than once per word. A second table remembers, for each
// distinct word of the document as written, the terms it gave, so a
// repeated word is not split and lowercased again.
type docTerms struct {
	slots []int32 // index + 1 in ents; 0 is free
	ents  []docTerm
	arena []byte // the terms of ents, end to end

	wslots []int32 // index + 1 in words; 0 is free
	words  []docWord
	warena []byte  // the words, end to end
	refs   []int32 // the terms each word gave, as indices in ents
}

type docTerm struct {
	h    uint64
	tf   uint32
	slot uint32
	off  uint32 // its bytes: arena[off:off+n]
	n    uint32
}

type docWord struct {
	h          uint64
	off, n     uint32 // its bytes: warena[off:off+n]
	refs, nref uint32 // its terms: refs[refs:refs+nref]
	slot       uint32
}

// maxCachedWord bounds the words docTerms remembers; longer ones (blobs,
// long names) are split each time.
const maxCachedWord = 64

// word counts the terms of one word (a run of letters and digits) and
// returns how many it gave.
func (lt *docTerms) word(w []byte, low *[]byte) uint32 {
	if len(w) > maxCachedWord {
		var n uint32
		lt.split(w, low, func(int32) { n++ })
		return n
	}
	h := hashTerm(w)
	mask := uint64(len(lt.wslots) - 1)
	i := h & mask
	for ; lt.wslots[i] != 0; i = (i + 1) & mask {
		if e := &lt.words[lt.wslots[i]-1]; e.h == h && string(lt.warena[e.off:e.off+e.n]) == string(w) {
			for _, r := range lt.refs[e.refs : e.refs+e.nref] {
				lt.ents[r].tf++
			}
			return e.nref
		}
	}
	start := uint32(len(lt.refs))
	lt.split(w, low, func(r int32) { lt.refs = append(lt.refs, r) })
	lt.words = append(lt.words, docWord{h: h, off: uint32(len(lt.warena)), n: uint32(len(w)), refs: start, nref: uint32(len(lt.refs)) - start, slot: uint32(i)})
	lt.warena = append(lt.warena, w...)
	lt.wslots[i] = int32(len(lt.words))
	if 2*len(lt.words) > len(lt.wslots) {
		lt.wslots = regrow(lt.wslots, len(lt.words), func(k int) (uint64, *uint32) { return lt.words[k].h, &lt.words[k].slot })
	}
	return uint32(len(lt.refs)) - start
}

// split counts the terms of word w, calling fn with the index in ents of
// each.
func (lt *docTerms) split(w []byte, low *[]byte, fn func(int32)) {
	splitWord(w, low, func(t []byte) { fn(lt.count(t, hashTerm(t))) })
}

// count counts one occurrence of term t, whose hash is h, and returns its
// index in ents.
func (lt *docTerms) count(t []byte, h uint64) int32 {
	mask := uint64(len(lt.slots) - 1)
	i := h & mask
	for ; lt.slots[i] != 0; i = (i + 1) & mask {
		k := lt.slots[i] - 1
		if e := &lt.ents[k]; e.h == h && string(lt.arena[e.off:e.off+e.n]) == string(t) {
			e.tf++
			return k
		}
	}
	lt.ents = append(lt.ents, docTerm{h: h, tf: 1, slot: uint32(i), off: uint32(len(lt.arena)), n: uint32(len(t))})
	lt.arena = append(lt.arena, t...)
	lt.slots[i] = int32(len(lt.ents))
	if 2*len(lt.ents) > len(lt.slots) {
		lt.slots = regrow(lt.slots, len(lt.ents), func(k int) (uint64, *uint32) { return lt.ents[k].h, &lt.ents[k].slot })
	}
	return int32(len(lt.ents) - 1)
}

// reset empties the tables for the next document.
func (lt *docTerms) reset() {
	if len(lt.slots) == 0 {
		lt.slots = make([]int32, 256)
		lt.wslots = make([]int32, 256)
	}
	for _, e := range lt.ents {
		lt.slots[e.slot] = 0
	}
	for _, e := range lt.words {
		lt.wslots[e.slot] = 0
	}
	lt.ents, lt.arena = lt.ents[:0], lt.arena[:0]
	lt.words, lt.warena, lt.refs = lt.words[:0], lt.warena[:0], lt.refs[:0]
}

// regrow returns a table twice the size of slots holding the n items again
// at their hashes; at gives item k's hash and where its slot is noted.
func regrow(slots []int32, n int, at func(k int) (uint64, *uint32)) []int32 {
	slots = make([]int32, 2*len(slots))
	mask := uint64(len(slots) - 1)
	for k := 0; k < n; k++ {
		h, slot := at(k)
		i := h & mask
		for slots[i] != 0 {
			i = (i + 1) & mask
		}
		slots[i] = int32(k + 1)
		*slot = uint32(i)
	}
	return slots
}
