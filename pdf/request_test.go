package pdf

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/controller"
)

func TestCreateRequestValidate(t *testing.T) {
	tests := []struct {
		name, body string
		code       string
		field      string
	}{
		{"url", `{"source":{"type":"url","content":"https://example.com/a"}}`, "", ""},
		{"html with base and options", `{"source":{"type":"html","content":"<p>x</p>","baseUrl":"https://a.example/"},"options":{"format":"A4","landscape":true},"callback":{"url":"https://cb.example/h"},"priority":"slow"}`, "", ""},
		{"no type", `{"source":{"content":"x"}}`, baton.EInvalid, "source.type"},
		{"bad type", `{"source":{"type":"pdf","content":"x"}}`, baton.EInvalid, "source.type"},
		{"empty url", `{"source":{"type":"url"}}`, baton.EInvalid, "source.content"},
		{"file url", `{"source":{"type":"url","content":"file:///etc/passwd"}}`, baton.EInvalid, "source.content"},
		{"relative url", `{"source":{"type":"url","content":"/a"}}`, baton.EInvalid, "source.content"},
		{"userinfo", `{"source":{"type":"url","content":"http://u:p@a.example/"}}`, baton.EInvalid, "source.content"},
		{"base on url", `{"source":{"type":"url","content":"http://a.example/","baseUrl":"http://b.example/"}}`, baton.EInvalid, "source.baseUrl"},
		{"bad base", `{"source":{"type":"html","content":"x","baseUrl":"ftp://b"}}`, baton.EInvalid, "source.baseUrl"},
		{"too large", `{"source":{"type":"html","content":"` + strings.Repeat("x", 101) + `"}}`, baton.ETooLarge, "source.content"},
		{"bad option", `{"source":{"type":"html","content":"x"},"options":{"scale":9}}`, baton.EInvalid, "options.scale"},
		{"unknown option", `{"source":{"type":"html","content":"x"},"options":{"zoom":1}}`, baton.EInvalid, "zoom"},
		{"proxy header", `{"source":{"type":"html","content":"x"},"options":{"extraHttpHeaders":{"Proxy-Authorization":"x"}}}`, baton.EInvalid, "extraHttpHeaders"},
		{"callback without url", `{"source":{"type":"html","content":"x"},"callback":{}}`, baton.EInvalid, "callback.url"},
		{"callback scheme", `{"source":{"type":"html","content":"x"},"callback":{"url":"gopher://x"}}`, baton.EInvalid, "callback.url"},
		{"priority", `{"source":{"type":"html","content":"x"},"priority":"now"}`, baton.EInvalid, "priority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := DecodeCreate(strings.NewReader(tc.body), 1<<20)
			if err == nil {
				_, err = req.Validate(100)
			}
			if got := baton.ErrorCode(err); got != tc.code {
				t.Fatalf("code %q (%v), want %q", got, err, tc.code)
			}
			if err != nil && !strings.Contains(baton.ErrorMessage(err), tc.field) {
				t.Fatalf("message %q does not name %s", baton.ErrorMessage(err), tc.field)
			}
		})
	}
}

func TestHashIgnoresFormatting(t *testing.T) {
	a, _ := DecodeCreate(strings.NewReader(`{"source":{"type":"html","content":"x"},"options":{"landscape":true,"format":"A4"}}`), 1<<20)
	b, _ := DecodeCreate(strings.NewReader(`{"options":{ "format":"A4", "landscape":true },"source":{"content":"x","type":"html"}}`), 1<<20)
	c, _ := DecodeCreate(strings.NewReader(`{"source":{"type":"html","content":"y"},"options":{"landscape":true,"format":"A4"}}`), 1<<20)
	oa, _ := a.Validate(0)
	ob, _ := b.Validate(0)
	oc, _ := c.Validate(0)
	if a.hash(oa) != b.hash(ob) || a.hash(oa) == c.hash(oc) {
		t.Fatal("hash must depend on the request, not its formatting")
	}
}

func FuzzCreateRequest(f *testing.F) {
	f.Add(`{"source":{"type":"url","content":"https://example.com"}}`)
	f.Add(`{"source":{"type":"html","content":"<p>中文</p>","baseUrl":"http://a/"},"options":{"margin":{"top":"1cm"},"pageRanges":"1-2"},"priority":"fast"}`)
	f.Add(`{"source":{"type":"html","content":"x"},"options":{"width":"10in","height":12,"cookies":[{"name":"a","value":"b"}]}}`)
	f.Add(`{"callback":{"url":"http://[::1]:80/"}}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := DecodeCreate(strings.NewReader(body), 1<<16)
		if err != nil {
			if baton.ErrorCode(err) == baton.EInternal {
				t.Fatalf("decode error is not an application error: %v", err)
			}
			return
		}
		opts, err := req.Validate(1 << 12)
		if err != nil {
			if c := baton.ErrorCode(err); c != baton.EInvalid && c != baton.ETooLarge {
				t.Fatalf("validate: code %q: %v", c, err)
			}
			return
		}
		// A valid request always makes a payload that a worker can read.
		b, _ := json.Marshal(payload{ConversionID: "X", Source: req.Source, Options: opts})
		var p payload
		if err := json.Unmarshal(b, &p); err != nil || p.Options.Validate() != nil {
			t.Fatalf("payload round trip: %v", err)
		}
		_ = req.hash(opts)
	})
}

func FuzzReplayRequest(f *testing.F) {
	f.Add(`{"attempts":3,"backoffMultiplier":2}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, body string) {
		var r ReplayRequest
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return
		}
		if err := r.Validate(); err == nil && (r.Attempts < 1 || r.Attempts > 10 || r.BackoffMultiplier < 1 || r.BackoffMultiplier > 10) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

func TestAdvance(t *testing.T) {
	data := func(kind string) json.RawMessage { return json.RawMessage(`{"kind":"` + kind + `"}`) }
	task := baton.TaskInfo{ID: "T", Type: TypeRender, Queue: QueueNormal, Payload: json.RawMessage(`{"conversionId":"T"}`), MaxAttempts: 3}
	tests := []struct {
		name     string
		queue    string
		prev     json.RawMessage
		res      baton.Result
		want     controller.Plan
		followUp string
	}{
		{"pass", "", nil, baton.Result{Outcome: baton.OutcomePass, Data: data("ok")}, controller.Plan{FinalState: baton.StateCompleted}, ""},
		{"timeout", "", nil, baton.Result{Outcome: baton.OutcomeReject, Data: data("timeout")}, controller.Plan{FinalState: baton.StateTimeout}, ""},
		{"refused", "", nil, baton.Result{Outcome: baton.OutcomeReject, Data: data("refused")}, controller.Plan{FinalState: baton.StateFailed}, ""},
		{"first crash retries", "", nil, baton.Result{Outcome: baton.OutcomeRetry, Data: data("crashed")}, controller.Plan{}, ""},
		{"crash after a hang is poison", "", data("hung"), baton.Result{Outcome: baton.OutcomeRetry, Data: data("crashed")},
			controller.Plan{Outcome: baton.OutcomeReject, FinalState: baton.StateFailed}, ""},
		{"retry after a crash that was not a stall", "", data("crashed"), baton.Result{Outcome: baton.OutcomeRetry}, controller.Plan{}, ""},
		{"slow moves to pdf.slow", "", nil, baton.Result{Outcome: baton.OutcomeReject, Data: data("slow")}, controller.Plan{FinalState: baton.StateFailed}, "T-slow"},
		{"slow on pdf.slow is a timeout", QueueSlow, nil, baton.Result{Outcome: baton.OutcomeReject, Data: data("slow")}, controller.Plan{FinalState: baton.StateTimeout}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ti := task
			ti.Data = tc.prev
			if tc.queue != "" {
				ti.Queue = tc.queue
			}
			var stalled int
			m := NewMetrics(nil, func() { stalled++ })
			p, err := NewAdvancer(m, nil).Advance(t.Context(), ti, tc.res)
			if err != nil {
				t.Fatal(err)
			}
			if tc.followUp != "" {
				if len(p.FollowUps) != 1 || p.FollowUps[0].ID != tc.followUp || p.FollowUps[0].Queue != QueueSlow || !p.FollowUps[0].Notify || string(p.FollowUps[0].Payload) != string(task.Payload) {
					t.Fatalf("follow-ups %+v", p.FollowUps)
				}
				p.FollowUps = nil
			}
			p.Reason = ""
			if diff := cmp.Diff(tc.want, p); diff != "" {
				t.Fatalf("plan (-want +got):\n%s", diff)
			}
			if want := tc.res.Outcome == baton.OutcomeRetry && len(tc.res.Data) > 0; want != (stalled == 1) {
				t.Fatalf("stalled counted %d times", stalled)
			}
		})
	}
}

func TestResources(t *testing.T) {
	base, _ := url.Parse("https://site.example/dir/page.html")
	doc := `<html><head><link rel="stylesheet" href="/s.css"><link rel="preload" as="font" href="f.woff2">
<style>@font-face{src:url("/x.ttf")} body{background:url(bg.png)}</style>
<script src="https://cdn.example/a.js"></script></head>
<body style="background-image:url('/b.png')"><img src="i.png"><img src="i.png"><img src="data:image/png;base64,AA">
<iframe src="http://169.254.169.254/"></iframe><img src="file:///etc/passwd"></body></html>`
	res, fonts, rel := resources([]byte(doc), base)
	var got []string
	for _, r := range res {
		got = append(got, r.kind+" "+r.url)
	}
	sort.Strings(got)
	want := []string{
		"fonts https://site.example/dir/f.woff2",
		"fonts https://site.example/x.ttf",
		"iframes http://169.254.169.254/",
		"images file:///etc/passwd",
		"images https://site.example/b.png",
		"images https://site.example/dir/bg.png",
		"images https://site.example/dir/i.png",
		"scripts https://cdn.example/a.js",
		"stylesheets https://site.example/s.css",
	}
	if diff := cmp.Diff(want, got); diff != "" || !fonts || rel != 0 {
		t.Fatalf("resources (-want +got):\n%s\nfonts %v relative %d", diff, fonts, rel)
	}
	if _, _, rel := resources([]byte(`<img src="a.png"><script src="/b.js"></script>`), nil); rel != 2 {
		t.Fatalf("relative without base: %d", rel)
	}
}
