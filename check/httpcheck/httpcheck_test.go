package httpcheck

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
)

const doc = `{"StateCode":1,"Result":{"BaiduPcWeight":"3","a.b":{"c":true},"list":[{"bt":"x","ts":1},{"bt":"y"}],"a/b":{"~k":2}}}`

func TestPath(t *testing.T) {
	v, err := DecodeJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want []string
	}{
		{"StateCode", []string{"1"}},
		{"$.Result.BaiduPcWeight", []string{"3"}},
		{"Result.list[*].bt", []string{"x", "y"}},
		{"Result.list[].bt", []string{"x", "y"}},
		{"Result.list[1].bt", []string{"y"}},
		{"Result.list[-1].bt", []string{"y"}},
		{"Result.list[5].bt", nil},
		{`Result["a.b"].c`, []string{"true"}},
		{"/Result/list/0/bt", []string{"x"}},
		{"/Result/a~1b/~0k", []string{"2"}},
		{"Result.*.c", []string{"true"}},
		{"Result.missing", nil},
		{"StateCode.x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := ParsePath(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range p.Eval(v) {
				if s, ok := Text(x); ok {
					got = append(got, s)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"a..b", "a[", "a[x]", `a["k`, "a.", "a]b", ".", "[\"x\"y]"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
}

func TestSelector(t *testing.T) {
	page := `<html><body><table class="jz-info"><tr><th>被墙</th><td data-field="blocked" class="v x">是</td></tr>
<tr><td data-field="age">7 年</td></tr></table><ul class="jz-titles"><li>真人<em>下注</em></li><li><a href="/a">二</a></li></ul>
<div id="main"><p>one</p><span><p>deep</p></span></div><script>var x="<li>no</li>"</script></body></html>`
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sel  string
		want []string
	}{
		{"td[data-field=blocked]", []string{"是"}},
		{`td[data-field="age"]`, []string{"7 年"}},
		{"td.v.x", []string{"是"}},
		{"td.v.y", nil},
		{"ul.jz-titles li", []string{"真人下注", "二"}},
		{"ul > li", []string{"真人下注", "二"}},
		{"li a@href", []string{"/a"}},
		{"#main > p", []string{"one"}},
		{"#main p", []string{"one", "deep"}},
		{"td[data-field*=loc]", []string{"是"}},
		{"th, td[data-field=age]", []string{"被墙", "7 年"}},
		{"*[data-field]", []string{"是", "7 年"}},
	}
	for _, tt := range tests {
		t.Run(tt.sel, func(t *testing.T) {
			s, err := ParseSelector(tt.sel)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s.Values(root)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"", "td[", "td >", "> td", "td >> li", ".", "#", "td[a b]", "a@", "td[=x]", "td!x"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("ParseSelector(%q) accepted", bad)
		}
	}
}

func TestInt(t *testing.T) {
	tests := []struct {
		in   any
		want int64
		ok   bool
	}{
		{"3", 3, true}, {"建站5年", 5, true}, {"1,234", 1234, true}, {"1，234", 1234, true}, {"-2", -2, true},
		{"4928466 ~ 76713", 4928466, true}, {"无", 0, false}, {"", 0, false}, {nil, 0, false}, {true, 0, false},
		{float64(2.9), 2, true}, {"99999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, ok := Int(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Int(%#v) = %d, %t; want %d, %t", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestExtractorCompile(t *testing.T) {
	for _, tt := range []struct {
		e      Extractor
		format string
		ok     bool
	}{
		{Extractor{JSON: "a.b"}, FormatJSON, true},
		{Extractor{JSON: "a.b"}, FormatHTML, false},
		{Extractor{CSS: "td"}, FormatJSON, false},
		{Extractor{CSS: "td"}, FormatHTML, true},
		{Extractor{Regexp: `x(\d+)`}, FormatHTML, true},
		{Extractor{Regexp: `(`}, FormatJSON, false},
		{Extractor{JSON: "a", CSS: "b"}, FormatJSON, false},
	} {
		if _, err := tt.e.Compile(tt.format); (err == nil) != tt.ok {
			t.Errorf("%v in %s: err %v, want ok=%t", tt.e, tt.format, err, tt.ok)
		}
	}
	c, _ := Extractor{Regexp: `<b>(.*?)</b>`}.Compile(FormatHTML)
	d, _ := ParseDocument([]byte(`<b>a &amp; <i>b</i></b><b>c</b>`), FormatHTML)
	if diff := cmp.Diff([]string{"a & b", "c"}, c.All(d)); diff != "" {
		t.Errorf("regexp values (-want +got):\n%s", diff)
	}
}

func FuzzPath(f *testing.F) {
	for _, p := range []string{"Result.BaiduPcWeight", "data.history[*].bt", "/a/0/b", `a["x.y"][-1]`, "$", "*.*", "a[]"} {
		f.Add(p, []byte(doc))
	}
	f.Fuzz(func(t *testing.T, path string, body []byte) {
		p, err := ParsePath(path)
		if err != nil {
			return
		}
		if len(p.steps) > MaxPathSteps {
			t.Fatalf("%d steps accepted", len(p.steps))
		}
		v, err := DecodeJSON(body)
		if err != nil {
			return
		}
		for _, x := range p.Eval(v) {
			Text(x)
			Int(x)
		}
	})
}

func FuzzSelector(f *testing.F) {
	for _, s := range []string{"td[data-field=age]", "ul.jz-titles li", "#main > p", "a@href", `td[x="a b"], th`, "*"} {
		f.Add(s, `<ul class="jz-titles"><li>a</li></ul><td data-field="age">3</td>`)
	}
	f.Fuzz(func(t *testing.T, sel, page string) {
		s, err := ParseSelector(sel)
		if err != nil {
			return
		}
		root, err := html.Parse(strings.NewReader(page))
		if err != nil {
			return
		}
		for _, v := range s.Values(root) {
			if strings.Contains(v, "  ") {
				t.Fatalf("value %q not collapsed", v)
			}
		}
	})
}

func FuzzInt(f *testing.F) {
	for _, s := range []string{"3", "建站5年", "1,234", "1，234", "-2", "4928466 ~ 76713", "", "无"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := Int(s)
		if !ok && n != 0 {
			t.Fatalf("Int(%q) = %d, false", s, n)
		}
	})
}
