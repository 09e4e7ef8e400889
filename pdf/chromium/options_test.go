package chromium

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name, json, wantErr string
	}{
		{"empty", `{}`, ""},
		{"full", `{"format":"Letter","landscape":true,"margin":{"top":"1cm","right":"10mm","bottom":"0.5in","left":48},
			"printBackground":true,"scale":1.5,"pageRanges":"1-3, 5","headerTemplate":"<span class=title></span>",
			"preferCSSPageSize":true,"waitUntil":"networkidle","waitForSelector":"#done","waitDelayMs":100,
			"emulateMedia":"screen","timeoutMs":20000,"userAgent":"x","extraHttpHeaders":{"X-A":"b"},
			"cookies":[{"name":"a","value":"b","domain":"example.com","path":"/","sameSite":"Lax"}]}`, ""},
		{"custom size", `{"width":"210mm","height":"297mm"}`, ""},
		{"unknown field", `{"colour":1}`, "unknown field"},
		{"wrong type", `{"scale":"big"}`, "options.scale"},
		{"trailing", `{} {}`, "trailing"},
		{"scale", `{"scale":3}`, "options.scale must be between 0.1 and 2"},
		{"scale low", `{"scale":0.01}`, "options.scale"},
		{"format", `{"format":"B5"}`, "options.format"},
		{"format and size", `{"format":"A4","width":"1in","height":"1in"}`, "options.format"},
		{"width alone", `{"width":"1in"}`, "options.width and options.height"},
		{"bad unit", `{"width":"1pt","height":"1in"}`, "options.width"},
		{"zero width", `{"width":"0mm","height":"1in"}`, "options.width"},
		{"negative margin", `{"margin":{"top":"-1cm"}}`, "options.margin.top"},
		{"huge margin", `{"margin":{"left":"5in","right":"5in"}}`, "printable area"},
		{"page ranges", `{"pageRanges":"a-b"}`, "options.pageRanges"},
		{"page range order", `{"pageRanges":"5-2"}`, "options.pageRanges"},
		{"page zero", `{"pageRanges":"0"}`, "options.pageRanges"},
		{"waitUntil", `{"waitUntil":"domcontentloaded"}`, "options.waitUntil"},
		{"waitDelay", `{"waitDelayMs":-1}`, "options.waitDelayMs"},
		{"delay over timeout", `{"waitDelayMs":5000,"timeoutMs":1000}`, "options.waitDelayMs"},
		{"media", `{"emulateMedia":"tv"}`, "options.emulateMedia"},
		{"timeout", `{"timeoutMs":99999999}`, "options.timeoutMs"},
		{"ua newline", `{"userAgent":"a\r\nX-Evil: 1"}`, "options.userAgent"},
		{"proxy header", `{"extraHttpHeaders":{"Proxy-Authorization":"Basic eA=="}}`, "may not be set"},
		{"host header", `{"extraHttpHeaders":{"host":"x"}}`, "may not be set"},
		{"header name", `{"extraHttpHeaders":{"a b":"x"}}`, "not a valid header name"},
		{"header value", `{"extraHttpHeaders":{"a":"x\ny"}}`, "options.extraHttpHeaders"},
		{"cookie name", `{"cookies":[{"name":"","value":"x"}]}`, "options.cookies[0].name"},
		{"cookie value", `{"cookies":[{"name":"a","value":"x;y"}]}`, "options.cookies[0].value"},
		{"cookie path", `{"cookies":[{"name":"a","value":"x","path":"nope"}]}`, "options.cookies[0].path"},
		{"cookie samesite", `{"cookies":[{"name":"a","value":"x","sameSite":"lax"}]}`, "options.cookies[0].sameSite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseOptions([]byte(tc.json))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(ClientMessage(err), tc.wantErr) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPrintParams(t *testing.T) {
	o, err := ParseOptions([]byte(`{"format":"a5","landscape":true,"margin":{"top":"96px","left":"2.54cm"},"footerTemplate":"<b>f</b>"}`))
	if err != nil {
		t.Fatal(err)
	}
	p := o.printParams()
	if p.PaperWidth != 5.83 || p.PaperHeight != 8.27 || !*p.Landscape {
		t.Errorf("paper %v x %v landscape %v", p.PaperWidth, p.PaperHeight, *p.Landscape)
	}
	if math.Abs(*p.MarginTop-1) > 1e-9 || math.Abs(*p.MarginLeft-1) > 1e-9 || math.Abs(*p.MarginRight-1/2.54) > 1e-9 {
		t.Errorf("margins %v %v %v", *p.MarginTop, *p.MarginLeft, *p.MarginRight)
	}
	if !*p.DisplayHeaderFooter || p.HeaderTemplate != "<span></span>" || p.FooterTemplate != "<b>f</b>" || p.Scale != 1 {
		t.Errorf("header/footer/scale: %+v", p)
	}
}

// FuzzParseOptions: decoding and validation never panic, every error is an
// ErrInvalid, and every accepted value yields print parameters Chromium
// accepts.
func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"scale":2}`, `{"width":"8.5in","height":11}`, `{"margin":{"top":"1e308in"}}`,
		`{"pageRanges":"1-2,3"}`, `{"format":"tabloid","landscape":true}`, `{"cookies":[{"name":"a","value":"b"}]}`,
		`{"width":"NaNmm","height":"1in"}`, `{"scale":1e-9}`, `{"width":"1e400px","height":"1px"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseOptions(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("accepted options fail Validate: %v", err)
		}
		p := o.printParams()
		finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
		if !(p.Scale >= 0.1 && p.Scale <= 2) {
			t.Fatalf("scale %v", p.Scale)
		}
		if !finite(p.PaperWidth) || !finite(p.PaperHeight) || p.PaperWidth <= 0 || p.PaperHeight <= 0 {
			t.Fatalf("paper %v x %v", p.PaperWidth, p.PaperHeight)
		}
		for _, m := range []*float64{p.MarginTop, p.MarginRight, p.MarginBottom, p.MarginLeft} {
			if !finite(*m) || *m < 0 {
				t.Fatalf("margin %v", *m)
			}
		}
		if *p.MarginTop+*p.MarginBottom >= p.PaperHeight || *p.MarginLeft+*p.MarginRight >= p.PaperWidth {
			t.Fatalf("margins leave no area")
		}
	})
}
