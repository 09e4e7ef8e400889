package wordlist

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultLists(t *testing.T) {
	l := Default()
	got := map[string]bool{}
	for _, x := range l.Lists() {
		got[x.Category] = x.Black
		if len(x.Words) == 0 {
			t.Errorf("category %s is empty", x.Category)
		}
	}
	if diff := cmp.Diff(builtinBlack, got); diff != "" {
		t.Errorf("default categories (-want +got):\n%s", diff)
	}
}

func TestMatch(t *testing.T) {
	l := Default()
	tests := []struct {
		name string
		text string
		want []Hit
	}{
		{"provider example title", "皇冠体育(中国)官方网站-真人下注", []Hit{
			{Gambling, "皇冠体育", true}, {Gambling, "体育(中国)官方网站", true}, {Gambling, "真人下注", true}, {Gambling, "下注", true}}},
		{"ascii case-insensitive", "Best ONLINE Casino and Poker", []Hit{
			{Gambling, "online casino", true}, {Gambling, "casino", true}, {Gambling, "poker", true}}},
		{"ascii word boundary", "Sussex pokerface casinos", nil},
		{"ascii inside CJK", "澳门casino娱乐", []Hit{{Gambling, "casino", true}}},
		{"porn", "无码高清 人妻", []Hit{{Porn, "无码", true}, {Porn, "人妻", true}}},
		{"parked signal", "This domain is parked free, courtesy of GoDaddy", []Hit{{Parked, "this domain is parked", false}}},
		{"for sale", "域名出售 联系QQ", []Hit{{ForSale, "域名出售", false}}},
		{"repeated word once", "poker poker poker", []Hit{{Gambling, "poker", true}}},
		{"clean", "欢迎访问某某科技有限公司官方网站 Welcome", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, l.Match(tt.text)); diff != "" {
				t.Errorf("Match(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name  string
		lists []List
		ok    bool
	}{
		{"custom black", []List{{Category: "custom-words", Black: true, Words: []string{"灰词"}}}, true},
		{"bad category", []List{{Category: "Gambling!", Words: []string{"ab"}}}, false},
		{"duplicate category", []List{{Category: "x", Words: []string{"ab"}}, {Category: "x", Words: []string{"cd"}}}, false},
		{"builtin blackness flipped", []List{{Category: Gambling, Black: false, Words: []string{"ab"}}}, false},
		{"empty word", []List{{Category: "x", Words: []string{"  "}}}, false},
		{"one rune", []List{{Category: "x", Words: []string{"a"}}}, false},
		{"control char", []List{{Category: "x", Words: []string{"a\x00b"}}}, false},
		{"too long", []List{{Category: "x", Words: []string{strings.Repeat("a", MaxWordBytes+1)}}}, false},
		{"bad utf8", []List{{Category: "x", Words: []string{"\xff\xfe"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.lists)
			if tt.ok != (err == nil) {
				t.Fatalf("New: err = %v, want ok=%t", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestJSONRoundTripAndWith(t *testing.T) {
	l, err := ParseJSON([]byte(`{"lists":[{"category":"gambling","black":true,"words":["Casino","casino","赌场"]},{"category":"parked","black":false,"words":["parked domain"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(l.Lists()[0].Words); got != 2 {
		t.Errorf("dedup: %d words, want 2", got)
	}
	b, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	l2, err := ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l.Lists(), l2.Lists()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := ParseJSON([]byte(`{"lists":[{"category":"x","blak":true,"words":["ab"]}]}`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown field: err = %v, want ErrInvalid", err)
	}
	l3, err := l.With(List{Category: "custom", Black: true, Words: []string{"灰词"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Hit{{"custom", "灰词", true}}, l3.Match("一些灰词")); diff != "" {
		t.Errorf("With (-want +got):\n%s", diff)
	}
	s := NewStore(nil)
	if s.Load() != Default() {
		t.Error("empty store should load defaults")
	}
	s.Set(l3)
	if s.Load() != l3 {
		t.Error("Set not visible")
	}
}

// naive is the reference matcher for the fuzz test.
func naive(l *Lists, text string) map[Hit]bool {
	out := map[Hit]bool{}
	ft := foldASCII(text)
	for _, x := range l.lists {
		for _, w := range x.Words {
			fw := foldASCII(w)
			for i := 0; i+len(fw) <= len(ft); i++ {
				if ft[i:i+len(fw)] != fw {
					continue
				}
				if isWordByte(fw[0]) && i > 0 && isWordByte(ft[i-1]) {
					continue
				}
				if e := i + len(fw); isWordByte(fw[len(fw)-1]) && e < len(ft) && isWordByte(ft[e]) {
					continue
				}
				out[Hit{x.Category, w, x.Black}] = true
				break
			}
		}
	}
	return out
}

func FuzzMatch(f *testing.F) {
	for _, s := range []string{"皇冠体育(中国)官方网站", "online casino", "Sussex", "xxx-porn", "a\xffcasino\xfe", "体育彩票快三"} {
		f.Add(s)
	}
	l := Default()
	f.Fuzz(func(t *testing.T, text string) {
		got := map[Hit]bool{}
		for _, h := range l.Match(text) {
			if got[h] {
				t.Fatalf("duplicate hit %v", h)
			}
			got[h] = true
		}
		if diff := cmp.Diff(naive(l, text), got); diff != "" {
			t.Fatalf("Match(%q) differs from naive (-naive +got):\n%s", text, diff)
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	l := Default()
	page := strings.Repeat("欢迎访问某某科技有限公司官方网站，我们提供专业的软件开发与咨询服务。Welcome to our company homepage, we build software. ", 200)
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		l.Match(page)
	}
}

func TestLoadDir(t *testing.T) {
	fsys := fstest.MapFS{
		"gambling.txt": {Data: []byte("# casino words\nCasino\n赌场\n")},
		"custom.txt":   {Data: []byte("#! black\n灰词\n")},
		"soft.txt":     {Data: []byte("under construction\n")},
		"notes.md":     {Data: []byte("ignored")},
	}
	l, err := LoadDir(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []Hit{{Gambling, "赌场", true}, {"custom", "灰词", true}, {"soft", "under construction", false}}
	if diff := cmp.Diff(want, l.Match("赌场 灰词 Under Construction")); diff != "" {
		t.Errorf("Match (-want +got):\n%s", diff)
	}
	if _, err := LoadDir(fstest.MapFS{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty dir: err = %v", err)
	}
	if _, err := LoadDir(fstest.MapFS{"x.txt": {Data: []byte("a\n")}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad word: err = %v", err)
	}
}
