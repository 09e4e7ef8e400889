package wordlist

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// Built-in categories.
const (
	Gambling = "gambling"
	Porn     = "porn"
	Drugs    = "drugs"
	Weapons  = "weapons"
	Fraud    = "fraud"
	Parked   = "parked"
	ForSale  = "forsale"
)

// builtinBlack says which built-in categories are black; an operator list may
// not flip it (that would silently stop blacklisting).
var builtinBlack = map[string]bool{
	Gambling: true, Porn: true, Drugs: true, Weapons: true, Fraud: true,
	Parked: false, ForSale: false,
}

// Validation limits.
const (
	MaxWordBytes     = 128
	MaxWordsPerList  = 20000
	MaxLists         = 64
	minWordRunes     = 2
	maxCategoryBytes = 32
)

var categoryRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// ErrInvalid is wrapped by every validation error of New and ParseJSON.
var ErrInvalid = errors.New("wordlist: invalid list")

// List is one category's words.
type List struct {
	// Category names the list ("gambling").
	Category string `json:"category"`
	// Black: a hit blacklists (true) or only rejects (false).
	Black bool `json:"black"`
	// Words are the words and phrases of the list.
	Words []string `json:"words"`
}

// Hit is one word found in a text.
type Hit struct {
	// Category of the list the word is in.
	Category string `json:"category"`
	// Word as written in the list.
	Word string `json:"word"`
	// Black reports a black category.
	Black bool `json:"black"`
}

// Lists is a validated, immutable set of lists with its matcher. Use Store
// to swap lists at run time.
type Lists struct {
	lists []List
	m     *matcher
}

//go:embed data/*.txt
var dataFS embed.FS

var defaultLists = sync.OnceValues(func() (*Lists, error) {
	entries, err := dataFS.ReadDir("data")
	if err != nil {
		return nil, fmt.Errorf("read embedded lists: %w", err)
	}
	var ls []List
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".txt")
		f, err := dataFS.Open(path.Join("data", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("open embedded list %s: %w", name, err)
		}
		words, err := ParseText(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("embedded list %s: %w", name, err)
		}
		ls = append(ls, List{Category: name, Black: builtinBlack[name], Words: words})
	}
	return New(ls)
})

// Default returns the embedded default lists. It panics only if the shipped
// data is invalid, which the package tests rule out.
func Default() *Lists {
	l, err := defaultLists()
	if err != nil {
		panic(err)
	}
	return l
}

// ParseText reads one word per line; blank lines and lines starting with
// '#' are skipped, and surrounding space is trimmed.
func ParseText(r io.Reader) ([]string, error) {
	var words []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words = append(words, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read word list: %w", err)
	}
	return words, nil
}

// New validates lists and builds their matcher. Words are trimmed and
// de-duplicated (after ASCII case folding) within a list.
func New(lists []List) (*Lists, error) {
	if len(lists) > MaxLists {
		return nil, fmt.Errorf("%w: %d lists, at most %d", ErrInvalid, len(lists), MaxLists)
	}
	seen := make(map[string]bool)
	out := make([]List, 0, len(lists))
	for _, l := range lists {
		if len(l.Category) > maxCategoryBytes || !categoryRE.MatchString(l.Category) {
			return nil, fmt.Errorf("%w: category %q must match %s (at most %d bytes)", ErrInvalid, l.Category, categoryRE, maxCategoryBytes)
		}
		if seen[l.Category] {
			return nil, fmt.Errorf("%w: category %q appears twice", ErrInvalid, l.Category)
		}
		seen[l.Category] = true
		if b, ok := builtinBlack[l.Category]; ok && b != l.Black {
			return nil, fmt.Errorf("%w: built-in category %q must have black=%t", ErrInvalid, l.Category, b)
		}
		if len(l.Words) > MaxWordsPerList {
			return nil, fmt.Errorf("%w: category %q has %d words, at most %d", ErrInvalid, l.Category, len(l.Words), MaxWordsPerList)
		}
		dedup := make(map[string]bool, len(l.Words))
		words := make([]string, 0, len(l.Words))
		for i, w := range l.Words {
			w = strings.TrimSpace(w)
			if err := validWord(w); err != nil {
				return nil, fmt.Errorf("%w: category %q word %d %q: %v", ErrInvalid, l.Category, i+1, w, err)
			}
			k := foldASCII(w)
			if dedup[k] {
				continue
			}
			dedup[k] = true
			words = append(words, w)
		}
		out = append(out, List{Category: l.Category, Black: l.Black, Words: words})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Category < out[j].Category })
	return &Lists{lists: out, m: build(out)}, nil
}

func validWord(w string) error {
	switch {
	case w == "":
		return errors.New("empty")
	case len(w) > MaxWordBytes:
		return fmt.Errorf("longer than %d bytes", MaxWordBytes)
	case !utf8.ValidString(w):
		return errors.New("not valid UTF-8")
	case utf8.RuneCountInString(w) < minWordRunes:
		return fmt.Errorf("shorter than %d characters", minWordRunes)
	}
	for _, r := range w {
		if unicode.IsControl(r) {
			return errors.New("contains a control character")
		}
	}
	return nil
}

type jsonLists struct {
	Lists []List `json:"lists"`
}

// ParseJSON reads operator lists: {"lists":[{"category","black","words"}]}.
// Unknown fields are rejected so a typo does not silently drop a list.
func ParseJSON(b []byte) (*Lists, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var jl jsonLists
	if err := dec.Decode(&jl); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return New(jl.Lists)
}

// MarshalJSON writes the lists in ParseJSON's format.
func (l *Lists) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonLists{Lists: l.Lists()})
}

// Lists returns a copy of the lists, sorted by category.
func (l *Lists) Lists() []List {
	out := make([]List, len(l.lists))
	for i, x := range l.lists {
		out[i] = List{Category: x.Category, Black: x.Black, Words: append([]string(nil), x.Words...)}
	}
	return out
}

// With returns new Lists where list replaces the list of the same category
// (or is added), validated like New.
func (l *Lists) With(list List) (*Lists, error) {
	ls := l.Lists()
	replaced := false
	for i := range ls {
		if ls[i].Category == list.Category {
			ls[i], replaced = list, true
		}
	}
	if !replaced {
		ls = append(ls, list)
	}
	return New(ls)
}

// Match returns the distinct words of every list found in text, in order of
// first appearance. A word in two lists gives a hit per list.
func (l *Lists) Match(text string) []Hit {
	if l == nil || l.m == nil {
		return nil
	}
	var hits []Hit
	var seen map[int32]bool
	l.m.scan(text, func(p int32) {
		if seen == nil {
			seen = make(map[int32]bool)
		}
		if seen[p] {
			return
		}
		seen[p] = true
		for _, e := range l.m.pats[p].entries {
			hits = append(hits, Hit{Category: l.lists[e.list].Category, Word: l.lists[e.list].Words[e.word], Black: l.lists[e.list].Black})
		}
	})
	return hits
}

// Store holds the current Lists for concurrent readers; Set swaps them
// atomically. The zero value holds Default().
type Store struct {
	p atomic.Pointer[Lists]
}

// NewStore returns a store holding l (Default() when nil).
func NewStore(l *Lists) *Store {
	s := &Store{}
	if l != nil {
		s.p.Store(l)
	}
	return s
}

// Load returns the current lists.
func (s *Store) Load() *Lists {
	if s == nil {
		return Default()
	}
	if l := s.p.Load(); l != nil {
		return l
	}
	return Default()
}

// Set publishes l to every later Load.
func (s *Store) Set(l *Lists) { s.p.Store(l) }
