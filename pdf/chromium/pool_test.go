package chromium

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recordTree remembers every process of the pool's browsers, so that the
// test can check none survives Close.
type pidRecorder struct {
	mu   sync.Mutex
	pids map[int]bool
	dirs map[string]bool
}

func (r *pidRecorder) record(p *Pool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pids == nil {
		r.pids, r.dirs = map[int]bool{}, map[string]bool{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for b := range p.live {
		r.dirs[b.dir] = true
		for _, pid := range processTree(b.pid) {
			r.pids[pid] = true
		}
	}
}

func (r *pidRecorder) checkGone(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pids) == 0 {
		t.Fatal("no browser processes were recorded")
	}
	for pid := range r.pids {
		// A SIGKILLed process is gone once the kernel has torn it down;
		// on a loaded machine that can lag Close by a moment.
		for i := 0; i < 100 && !isGone(pid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if !isGone(pid) {
			t.Errorf("chromium process %d still runs after Close", pid)
		}
	}
	for dir := range r.dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("profile dir %s still exists after Close", dir)
		}
	}
}

func hangServer(t *testing.T) (srv *httptest.Server, hit <-chan struct{}) {
	hang := make(chan struct{})
	hitCh := make(chan struct{}, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", writeHTML(`<p>RENDER-OK</p>`))
	mux.HandleFunc("/slow", writeHTML(`<p>SLOW-OK</p>`+"<script>document.write('')</script>"))
	mux.HandleFunc("/blocks", writeHTML(`<p>blocks</p><img src="/forever.png">`))
	mux.HandleFunc("/forever.png", func(w http.ResponseWriter, r *http.Request) {
		hitCh <- struct{}{}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(func() { close(hang); srv.Close() })
	return srv, hitCh
}

func TestCrashDuringRender(t *testing.T) {
	p := newTestPool(t, Config{Instances: 1, PagesPerInstance: 2, NavigationTimeout: 2 * time.Minute, HealthInterval: -1})
	var rec pidRecorder
	rec.record(p)
	srv, hit := hangServer(t)
	oldPID := p.Stats()[0].PID

	type result struct {
		err error
		d   time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		_, err := p.Render(context.Background(), Job{URL: srv.URL + "/blocks"})
		done <- result{err, time.Since(start)}
	}()
	<-hit // the page is loading and waits on its image
	if err := syscall.Kill(-oldPID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill process group: %v", err)
	}
	res := <-done
	if !errors.Is(res.err, ErrBrowserCrashed) || !errors.Is(res.err, ErrStalled) || errors.Is(res.err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrBrowserCrashed", res.err)
	}
	// Not a timing assertion: the only other way out was the 2-minute
	// navigation timeout.
	if res.d >= time.Minute {
		t.Fatalf("crash reported only after %v", res.d)
	}
	t.Logf("crash reported after %v: %v", res.d, res.err)

	waitFor(t, "the instance to restart", func() bool {
		s := p.Stats()[0]
		return s.Restarts[ReasonCrash] == 1 && s.PID != 0 && s.PID != oldPID
	})
	rec.record(p)
	out, err := p.Render(context.Background(), Job{URL: srv.URL + "/ok"})
	if err != nil {
		t.Fatalf("render after restart: %v", err)
	}
	if !strings.Contains(pdfText(t, out.PDF), "RENDER-OK") {
		t.Fatal("render after restart lacks its text")
	}
	p.Close()
	p.Close() // twice is fine
	rec.checkGone(t)
	if _, err := p.Render(context.Background(), Job{URL: srv.URL + "/ok"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("render after Close: %v, want ErrClosed", err)
	}
}

func TestRecycle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		reason string
	}{
		{"max tasks", Config{MaxTasksPerBrowser: 2}, ReasonMaxTasks},
		{"memory", Config{RestartMemoryMB: 1}, ReasonMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			hookRestarts := map[string]int{}
			var samples int
			cfg := tc.cfg
			cfg.Instances, cfg.PagesPerInstance, cfg.HealthInterval = 2, 1, -1
			cfg.Hooks = Hooks{
				OnRestart:      func(_ int, reason string) { mu.Lock(); hookRestarts[reason]++; mu.Unlock() },
				OnMemorySample: func(_ int, pss int64) { mu.Lock(); samples++; mu.Unlock() },
			}
			p := newTestPool(t, cfg)
			var rec pidRecorder
			rec.record(p)
			srv, hit := hangServer(t)
			_ = hit
			ctx := context.Background()

			// Renders on instance 0 until it asks for a recycle...
			for i := 0; i < 2; i++ {
				if _, err := p.Render(ctx, Job{URL: srv.URL + "/ok"}); err != nil {
					t.Fatal(err)
				}
			}
			// ...while another render, which must land on the other
			// instance, still succeeds.
			out, err := p.Render(ctx, Job{URL: srv.URL + "/ok", Options: Options{WaitDelayMs: 200}})
			if err != nil {
				t.Fatalf("concurrent render during recycle: %v", err)
			}
			if !strings.Contains(pdfText(t, out.PDF), "RENDER-OK") {
				t.Fatal("render during recycle lacks its text")
			}
			waitFor(t, "a "+tc.reason+" restart", func() bool {
				for _, s := range p.Stats() {
					if s.Restarts[tc.reason] > 0 {
						return true
					}
				}
				return false
			})
			rec.record(p)
			mu.Lock()
			if hookRestarts[tc.reason] == 0 || samples == 0 {
				t.Errorf("hooks: restarts %v, memory samples %d", hookRestarts, samples)
			}
			mu.Unlock()
			for _, s := range p.Stats() {
				if s.Restarts[ReasonCrash] != 0 {
					t.Errorf("instance %d crashed: %+v", s.ID, s)
				}
				t.Logf("instance %d: pid %d tasks %d/%d pss %d MB restarts %v", s.ID, s.PID, s.Tasks, s.TotalTasks, s.PSSBytes>>20, s.Restarts)
			}
			// The pool keeps serving after the recycle.
			if _, err := p.Render(ctx, Job{URL: srv.URL + "/ok"}); err != nil {
				t.Fatalf("render after recycle: %v", err)
			}
			rec.record(p)
			p.Close()
			rec.checkGone(t)
		})
	}
}

func TestRecycleKeepsServing(t *testing.T) {
	// One instance, recycled while a render is in flight: the in-flight
	// render finishes on the old browser and the next one is served by the
	// new browser — the pool is never drained.
	p := newTestPool(t, Config{Instances: 1, PagesPerInstance: 2, MaxTasksPerBrowser: 1, HealthInterval: -1})
	srv, _ := hangServer(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Go(func() {
			_, err := p.Render(ctx, Job{URL: srv.URL + "/ok", Options: Options{WaitDelayMs: 100}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("render: %v", err)
		}
	}
	waitFor(t, "max_tasks restarts", func() bool { return p.Stats()[0].Restarts[ReasonMaxTasks] >= 1 })
}

func TestHealthProbeRestartsHungBrowser(t *testing.T) {
	p := newTestPool(t, Config{Instances: 1, HealthInterval: 500 * time.Millisecond, RenderTimeout: 3 * time.Second})
	old := p.Stats()[0].PID
	// A stopped browser answers nothing: the probe times out.
	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an unhealthy restart", func() bool {
		s := p.Stats()[0]
		return s.Restarts[ReasonUnhealthy] == 1 && s.PID != 0 && s.PID != old
	})
	waitFor(t, "the stopped browser to be killed", func() bool { return isGone(old) })
	srv, _ := hangServer(t)
	if _, err := p.Render(context.Background(), Job{URL: srv.URL + "/ok"}); err != nil {
		t.Fatalf("render after restart: %v", err)
	}
}

// testProxy is a minimal HTTP forward proxy that demands Basic credentials
// (like the egress guard, with the session as user name) and refuses one
// host with 403 and a Proxy-Status header.
type testProxy struct {
	mu    sync.Mutex
	users map[string]int
}

func (tp *testProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Proxy-Authorization")
	user := ""
	if raw, ok := strings.CutPrefix(auth, "Basic "); ok {
		dec, _ := base64.StdEncoding.DecodeString(raw)
		user, _, _ = strings.Cut(string(dec), ":")
	}
	if user == "" {
		w.Header().Set("Proxy-Authenticate", `Basic realm="egress"`)
		w.WriteHeader(http.StatusProxyAuthRequired)
		return
	}
	tp.mu.Lock()
	tp.users[user]++
	tp.mu.Unlock()
	if r.URL.Hostname() == "blocked.example" {
		w.Header().Set("Proxy-Status", "baton-egress; error=destination_ip_prohibited")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "refused by egress policy")
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Proxy-Authorization")
	out.Header.Del("Proxy-Connection")
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func TestProxySession(t *testing.T) {
	tp := &testProxy{users: map[string]int{}}
	proxy := httptest.NewServer(tp)
	t.Cleanup(proxy.Close)
	p := newTestPool(t, Config{Instances: 1, ProxyURL: proxy.URL, HealthInterval: -1})
	srv, _ := hangServer(t)

	out, err := p.Render(context.Background(), Job{URL: srv.URL + "/ok", SessionID: "sess-42"})
	if err != nil {
		t.Fatalf("render through the proxy: %v", err)
	}
	if !strings.Contains(pdfText(t, out.PDF), "RENDER-OK") {
		t.Fatal("proxied render lacks its text")
	}
	tp.mu.Lock()
	n := tp.users["sess-42"]
	tp.mu.Unlock()
	if n == 0 {
		t.Fatalf("the proxy never saw session sess-42: %v", tp.users)
	}

	_, err = p.Render(context.Background(), Job{URL: "http://blocked.example/", SessionID: "sess-42"})
	if !errors.Is(err, ErrEgressRefused) || !strings.Contains(ClientMessage(err), "egress policy") {
		t.Fatalf("blocked page: %v, want ErrEgressRefused", err)
	}
	// Inline HTML goes through the same proxy for its sub-resources.
	_, err = p.Render(context.Background(), Job{HTML: `<p>inline via proxy</p>`, BaseURL: srv.URL + "/", SessionID: "sess-43"})
	if err != nil {
		t.Fatalf("inline render with proxy: %v", err)
	}
}
