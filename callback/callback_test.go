package callback_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/callback"
	"github.com/batonhq/baton/egress"
)

// listen opens a loopback listener on ip (127.0.0.2 is allowed by the test
// policy, 127.0.0.3 is not).
func listen(t *testing.T, ip string, h http.Handler) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	srv := &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/hook", &conns
}

type recorder struct {
	mu   sync.Mutex
	logs []callback.Attempt
}

func (r *recorder) record(_ context.Context, a callback.Attempt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, a)
	return nil
}

func newSender(t *testing.T, rec *recorder) *callback.Sender {
	t.Helper()
	pol, err := egress.NewPolicy(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := callback.New(callback.Config{HTTP: pol.HTTPClient(0), Record: rec.record, Backoff: 10 * time.Millisecond, Attempts: 4, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDeliverSignsRetriesAndRecords(t *testing.T) {
	const secret = "whsec-test"
	type got struct {
		body      []byte
		sig, ts   string
		validHMAC bool
	}
	var mu sync.Mutex
	var received []got
	answers := []int{500, 503, 200}
	u, _ := listen(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		// An independent check: HMAC-SHA256 over the raw body.
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(b)
		want := "sha256=" + hex.EncodeToString(m.Sum(nil))
		mu.Lock()
		n := len(received)
		received = append(received, got{b, r.Header.Get("X-Signature"), r.Header.Get("X-Signature-Timestamp"), hmac.Equal([]byte(want), []byte(r.Header.Get("X-Signature")))})
		mu.Unlock()
		w.WriteHeader(answers[n])
		_, _ = io.WriteString(w, "answer "+strconv.Itoa(answers[n]))
	}))
	rec := &recorder{}
	s := newSender(t, rec)
	fin := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := s.Deliver(context.Background(), callback.Delivery{TaskID: "T1", URL: u, Secret: secret,
		Payload: callback.Payload{TaskID: "T1", Status: "completed", ResultURL: "http://x/api/tasks/T1/result", FinishedAt: fin}})
	if !out.Delivered || out.Attempts != 3 || out.ResponseStatus != 200 {
		t.Fatalf("outcome %+v", out)
	}
	if len(received) != 3 || len(rec.logs) != 3 {
		t.Fatalf("received %d, logged %d", len(received), len(rec.logs))
	}
	sentAts := map[string]bool{}
	for i, g := range received {
		if !g.validHMAC {
			t.Errorf("attempt %d: signature %q does not verify", i+1, g.sig)
		}
		if ts, err := strconv.ParseInt(g.ts, 10, 64); err != nil || time.Since(time.Unix(ts, 0)) > time.Minute {
			t.Errorf("attempt %d: timestamp %q", i+1, g.ts)
		}
		var p map[string]any
		if err := json.Unmarshal(g.body, &p); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"taskId", "status", "resultUrl", "error", "finishedAt", "sentAt"} {
			if _, ok := p[k]; !ok {
				t.Errorf("attempt %d: body lacks %q: %s", i+1, k, g.body)
			}
		}
		sentAts[p["sentAt"].(string)] = true
		l := rec.logs[i]
		if l.Attempt != i+1 || l.RequestBody != string(g.body) || l.ResponseStatus != answers[i] || l.ResponseBody != "answer "+strconv.Itoa(answers[i]) {
			t.Errorf("log %d: %+v", i, l)
		}
		if (l.Error == "") != (answers[i] == 200) {
			t.Errorf("log %d error %q for status %d", i, l.Error, answers[i])
		}
	}
	if !callback.Verify(secret, received[2].body, received[2].sig) || callback.Verify("other", received[2].body, received[2].sig) {
		t.Error("Verify disagrees with the independent HMAC")
	}
	_ = sentAts // sentAt differs per attempt only at millisecond resolution; the body is re-signed each time.
}

func TestDeliverStops(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		attempts int
	}{
		{"4xx is permanent", 400, 1},
		{"429 is retried", 429, 4},
		{"5xx exhausts attempts", 502, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := listen(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(tc.status) }))
			rec := &recorder{}
			out := newSender(t, rec).Deliver(context.Background(), callback.Delivery{TaskID: "T", URL: u, Secret: "s", Payload: callback.Payload{TaskID: "T"}})
			if out.Delivered || out.Attempts != tc.attempts || len(rec.logs) != tc.attempts {
				t.Fatalf("outcome %+v, %d logs", out, len(rec.logs))
			}
		})
	}
}

func TestDeliverRefusedAddressIsLoggedNeverConnected(t *testing.T) {
	u, conns := listen(t, "127.0.0.3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	rec := &recorder{}
	out := newSender(t, rec).Deliver(context.Background(), callback.Delivery{TaskID: "T", URL: u, Secret: "s", Payload: callback.Payload{TaskID: "T"}})
	if out.Delivered || out.Attempts != 1 || len(rec.logs) != 1 {
		t.Fatalf("refused callback: %+v, %d logs (a refusal must not be retried)", out, len(rec.logs))
	}
	if l := rec.logs[0]; l.ResponseStatus != 0 || l.Error == "" || l.RequestBody == "" {
		t.Fatalf("log %+v", l)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the refused receiver got %d connections", n)
	}
	t.Logf("logged error: %s", rec.logs[0].Error)
}

func TestReplayNumbersContinue(t *testing.T) {
	u, _ := listen(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	rec := &recorder{}
	out := newSender(t, rec).Deliver(context.Background(), callback.Delivery{TaskID: "T", URL: u, Secret: "s", Replay: true, FirstAttempt: 4, Attempts: 3, Multiplier: 3})
	if !out.Delivered || len(rec.logs) != 1 || rec.logs[0].Attempt != 4 || !rec.logs[0].Replay {
		t.Fatalf("replay %+v %+v", out, rec.logs)
	}
}

func TestDispatcher(t *testing.T) {
	var hits atomic.Int64
	u, _ := listen(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	rec := &recorder{}
	d := callback.NewDispatcher(newSender(t, rec), 2, 4)
	for i := range 10 {
		if err := d.Submit(context.Background(), callback.Delivery{TaskID: strconv.Itoa(i), URL: u, Secret: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for hits.Load() < 10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	_ = d.Stop()
	_ = d.Stop()
	if hits.Load() != 10 {
		t.Fatalf("%d deliveries", hits.Load())
	}
	if err := d.Submit(context.Background(), callback.Delivery{}); err == nil {
		t.Fatal("submit after stop succeeded")
	}
}
