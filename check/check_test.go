package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/google/go-cmp/cmp"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"120", 120 * time.Second, true},
		{"  7 ", 7 * time.Second, true},
		{"0", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"-5", 0, false},
		{"99999999999999999999999", MaxRetryAfter, true},
		{"86401", MaxRetryAfter, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true},
		{"Sun Mar  1 12:00:10 2026", 10 * time.Second, true},
		{"Sat, 28 Feb 2026 12:00:00 GMT", 0, true}, // in the past
		{"Fri, 01 Jan 2100 00:00:00 GMT", MaxRetryAfter, true},
		{"soon", 0, false},
		{"12abc", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %t; want %v, %t", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "Sun, 01 Mar 2026 12:00:30 GMT", "1.5", "-1", "1e309", "", "Mon, 02 Jan 2006 15:04:05 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseRetryAfter(s, now)
		if d < 0 || d > MaxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %v out of range", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v with ok=false", s, d)
		}
	})
}

func TestFetcher(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("x", 100)) })
	mux.HandleFunc("/404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/429", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "42")
		w.WriteHeader(429)
	})
	mux.HandleFunc("/429-nohdr", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) })
	mux.HandleFunc("/503", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
		w.WriteHeader(503)
		fmt.Fprint(w, "maintenance")
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// A port with nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()

	f := &Fetcher{Client: srv.Client(), Timeout: 2 * time.Second, MaxBody: 10, MaxEvidence: 4, Now: func() time.Time { return now }}
	tests := []struct {
		url        string
		status     int
		body       string
		truncated  bool
		transient  error // sentinel expected in the chain, nil = none
		retryAfter time.Duration
	}{
		{url: srv.URL + "/ok", status: 200, body: strings.Repeat("x", 10), truncated: true},
		{url: srv.URL + "/404", status: 404, body: "404 page n", truncated: true},
		{url: srv.URL + "/429", transient: ErrRateLimited, retryAfter: 42 * time.Second},
		{url: srv.URL + "/429-nohdr", transient: ErrRateLimited, retryAfter: DefaultRateLimitedDelay},
		{url: srv.URL + "/503", transient: ErrServerError, retryAfter: 90 * time.Second},
		{url: srv.URL + "/hang", transient: context.DeadlineExceeded},
		{url: dead + "/x", transient: nil},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.url, srv.URL), func(t *testing.T) {
			resp, err := f.Get(context.Background(), tt.url, nil)
			if tt.status != 0 {
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if resp.StatusCode != tt.status || string(resp.Body) != tt.body || resp.Truncated != tt.truncated {
					t.Errorf("got %d %q truncated=%t", resp.StatusCode, resp.Body, resp.Truncated)
				}
				if ev := resp.Evidence(); len(ev) > 4+len("…") {
					t.Errorf("evidence %q longer than the cap", ev)
				}
				return
			}
			var te *TransientError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *TransientError", err)
			}
			if tt.transient != nil && !errors.Is(err, tt.transient) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.transient)
			}
			if te.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", te.RetryAfter, tt.retryAfter)
			}
			v := RetryVerdict(err, map[string]string{"k": "v"})
			if v.Outcome != baton.OutcomeRetry || v.RetryAfter != tt.retryAfter {
				t.Errorf("RetryVerdict = %+v", v)
			}
		})
	}
}

func TestVerdictResult(t *testing.T) {
	v := Verdict{Outcome: baton.OutcomeRetry, Reason: strings.Repeat("é", baton.MaxReasonLen), Data: json.RawMessage(`{bad`), RetryAfter: 48 * time.Hour}
	r := v.Result("lease-1")
	if err := r.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if r.RetryAfterMs != int64(MaxRetryAfter/time.Millisecond) {
		t.Errorf("RetryAfterMs = %d", r.RetryAfterMs)
	}
	if len(r.Reason) > baton.MaxReasonLen {
		t.Errorf("reason not cut: %d bytes", len(r.Reason))
	}
	if p := NewVerdict(baton.OutcomePass, "ok", nil).Result("l"); p.RetryAfterMs != 0 || p.Data != nil {
		t.Errorf("pass result = %+v", p)
	}
}

func TestSecret(t *testing.T) {
	s := Secret("hunter2")
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("cfg", "key", s)
	b, _ := json.Marshal(struct{ Key Secret }{s})
	for name, got := range map[string]string{
		//lint:ignore S1025 the test checks what each formatting verb prints
		"String": s.String(), "%v": fmt.Sprintf("%v", s), "%s": fmt.Sprintf("%s", s), "%q": fmt.Sprintf("%q", s),
		"%#v": fmt.Sprintf("%#v", s), "json": string(b), "slog": logged.String(),
	} {
		if strings.Contains(got, "hunter2") {
			t.Errorf("%s leaks the secret: %s", name, got)
		}
	}
	var back struct{ Key Secret }
	if err := json.Unmarshal([]byte(`{"Key":"abc"}`), &back); err != nil || back.Key.Reveal() != "abc" {
		t.Errorf("unmarshal: %v %q", err, back.Key.Reveal())
	}
	if s.Reveal() != "hunter2" {
		t.Error("Reveal")
	}
}

type fakeStep string

func (f fakeStep) Step() string { return string(f) }
func (f fakeStep) Check(context.Context, string) Verdict {
	return Verdict{Outcome: baton.OutcomePass}
}

func TestRegistry(t *testing.T) {
	r, err := NewRegistry(fakeStep("wayback"), fakeStep("register"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(fakeStep("register")); !errors.Is(err, ErrDuplicateStep) {
		t.Errorf("duplicate: err = %v", err)
	}
	if err := r.Register(fakeStep("")); err == nil {
		t.Error("empty step accepted")
	}
	if diff := cmp.Diff([]string{"register", "wayback"}, r.Steps()); diff != "" {
		t.Errorf("Steps (-want +got):\n%s", diff)
	}
	if c, ok := r.Lookup("wayback"); !ok || c.Step() != "wayback" {
		t.Error("Lookup wayback")
	}
	if _, ok := r.Lookup("juzi"); ok {
		t.Error("Lookup juzi found")
	}
}

func TestTruncateUTF8(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 5, "ab…"},
		{"真人下注", 7, "真…"},
		{"a\xffb", 10, "a\uFFFDb"},
		{"abc", 0, ""},
		{"abcdef", 2, "ab"},
	}
	for _, tt := range tests {
		if got := TruncateUTF8(tt.in, tt.n); got != tt.want {
			t.Errorf("TruncateUTF8(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
