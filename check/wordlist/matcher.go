package wordlist

import "sort"

// matcher is an Aho–Corasick automaton over ASCII-folded UTF-8 bytes. The
// root has a dense transition table; other states keep sorted sparse edges,
// so memory stays proportional to the total length of the words.
type matcher struct {
	root  [256]int32
	edges []edgeSet // per state
	fail  []int32
	out   []int32 // pattern ending at this state, -1 if none
	dict  []int32 // nearest state on the fail chain with out >= 0, -1 if none
	pats  []pattern
}

type edgeSet struct {
	keys []byte
	next []int32
}

func (e *edgeSet) get(c byte) int32 {
	if len(e.keys) <= 8 {
		for i, k := range e.keys {
			if k == c {
				return e.next[i]
			}
		}
		return -1
	}
	i := sort.Search(len(e.keys), func(i int) bool { return e.keys[i] >= c })
	if i < len(e.keys) && e.keys[i] == c {
		return e.next[i]
	}
	return -1
}

func (e *edgeSet) set(c byte, s int32) {
	i := sort.Search(len(e.keys), func(i int) bool { return e.keys[i] >= c })
	e.keys = append(e.keys, 0)
	e.next = append(e.next, 0)
	copy(e.keys[i+1:], e.keys[i:])
	copy(e.next[i+1:], e.next[i:])
	e.keys[i], e.next[i] = c, s
}

type entry struct{ list, word int }

type pattern struct {
	n            int  // length in bytes
	wordL, wordR bool // needs an ASCII word boundary on the left/right
	entries      []entry
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isWordByte(c byte) bool {
	c = lower(c)
	return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9')
}

func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}

func build(lists []List) *matcher {
	m := &matcher{}
	m.edges = []edgeSet{{}}
	m.out = []int32{-1}
	index := make(map[string]int32)
	for li, l := range lists {
		for wi, w := range l.Words {
			k := foldASCII(w)
			if p, ok := index[k]; ok {
				m.pats[p].entries = append(m.pats[p].entries, entry{li, wi})
				continue
			}
			s := int32(0)
			for i := 0; i < len(k); i++ {
				n := m.edges[s].get(k[i])
				if n < 0 {
					n = int32(len(m.edges))
					m.edges = append(m.edges, edgeSet{})
					m.out = append(m.out, -1)
					m.edges[s].set(k[i], n)
				}
				s = n
			}
			p := int32(len(m.pats))
			index[k] = p
			m.pats = append(m.pats, pattern{
				n: len(k), wordL: isWordByte(k[0]), wordR: isWordByte(k[len(k)-1]),
				entries: []entry{{li, wi}},
			})
			m.out[s] = p
		}
	}
	// Breadth-first failure links.
	m.fail = make([]int32, len(m.edges))
	m.dict = make([]int32, len(m.edges))
	m.dict[0] = -1
	queue := make([]int32, 0, len(m.edges))
	for c := 0; c < 256; c++ {
		n := m.edges[0].get(byte(c))
		if n < 0 {
			m.root[c] = 0
			continue
		}
		m.root[c] = n
		m.fail[n] = 0
		m.dict[n] = -1
		queue = append(queue, n)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		e := &m.edges[s]
		for i, c := range e.keys {
			n := e.next[i]
			f := m.fail[s]
			for {
				if t := m.step(f, c); t >= 0 || f == 0 {
					if t < 0 {
						t = 0
					}
					m.fail[n] = t
					break
				}
				f = m.fail[f]
			}
			if m.out[m.fail[n]] >= 0 {
				m.dict[n] = m.fail[n]
			} else {
				m.dict[n] = m.dict[m.fail[n]]
			}
			queue = append(queue, n)
		}
	}
	return m
}

// step is the goto function: -1 when s has no edge on c (root never fails).
func (m *matcher) step(s int32, c byte) int32 {
	if s == 0 {
		return m.root[c]
	}
	return m.edges[s].get(c)
}

// scan calls found for every pattern occurrence (pattern index) in text that
// respects the word-boundary rule.
func (m *matcher) scan(text string, found func(p int32)) {
	if len(m.pats) == 0 {
		return
	}
	s := int32(0)
	for i := 0; i < len(text); i++ {
		c := lower(text[i])
		for {
			if t := m.step(s, c); t >= 0 {
				s = t
				break
			}
			s = m.fail[s]
		}
		for o := s; o >= 0; o = m.dict[o] {
			p := m.out[o]
			if p < 0 {
				continue
			}
			pat := &m.pats[p]
			start, end := i+1-pat.n, i+1
			if pat.wordL && start > 0 && isWordByte(text[start-1]) {
				continue
			}
			if pat.wordR && end < len(text) && isWordByte(text[end]) {
				continue
			}
			found(p)
		}
	}
}
