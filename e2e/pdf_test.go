package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// --- helpers -----------------------------------------------------------

// requirePDFTools fails (never skips) without the browser the service uses
// by default and the PDF checkers.
func requirePDFTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"/usr/lib/chromium/chromium-headless-shell", "pdftotext", "pdfinfo"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required (apt-get install chromium-headless-shell fonts-noto-cjk poppler-utils): %v", tool, err)
		}
	}
}

// pdfServe starts a controller with one in-process worker rendering PDFs;
// only 127.0.0.2 is allowed beyond the default (nothing private).
func pdfServe(t *testing.T, extra ...string) *proc {
	t.Helper()
	requirePDFTools(t)
	args := []string{"--egress-allow", "127.0.0.2/32", "--pdf-callback-backoff", "300ms", "--pdf-browsers", "1", "--pdf-pages-per-browser", "1"}
	args = append(args, extra...)
	p := start(t, "pdf-controller", append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workers", "1",
		"--admin-token", adminTok, "--worker-token", workerTok}, args...)...)
	return p
}

// site is an HTTP server on a loopback address that counts connections.
type site struct {
	url   string
	conns atomic.Int64
	mux   *http.ServeMux
}

func newSite(t *testing.T, ip string) *site {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{url: "http://" + ln.Addr().String(), mux: http.NewServeMux()}
	srv := &http.Server{Handler: s.mux, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *site) page(path, body string) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, body)
	})
}

// call sends a request and returns status and body.
func call(t *testing.T, base, token, method, path string, body any, hdr ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type taskView struct {
	TaskID     string `json:"taskId"`
	Status     string `json:"status"`
	Queue      string `json:"queue"`
	Attempts   int    `json:"attempts"`
	Error      string `json:"error"`
	ResultURL  string `json:"resultUrl"`
	Pages      int    `json:"pages"`
	DurationMs *int64 `json:"durationMs"`
	Refused    []struct {
		Target string `json:"target"`
		Reason string `json:"reason"`
	} `json:"refused"`
}

func submit(t *testing.T, base, token string, body map[string]any, hdr ...string) string {
	t.Helper()
	st, b := call(t, base, token, "POST", "/api/tasks/pdf", body, hdr...)
	if st != 202 {
		t.Fatalf("create: %d %s", st, b)
	}
	var c struct{ TaskID, Status, Queue string }
	if err := json.Unmarshal(b, &c); err != nil || c.TaskID == "" || c.Status != "pending" || !strings.HasPrefix(c.Queue, "pdf.") {
		t.Fatalf("create answer %s", b)
	}
	return c.TaskID
}

func waitEnd(t *testing.T, base, token, id string) taskView {
	t.Helper()
	var v taskView
	waitFor(t, "task "+id+" to end", 3*time.Minute, func() bool {
		st, b := call(t, base, token, "GET", "/api/tasks/"+id, nil)
		if st != 200 {
			t.Fatalf("get task: %d %s", st, b)
		}
		_ = json.Unmarshal(b, &v)
		switch v.Status {
		case "completed", "failed", "timeout", "cancelled":
			return true
		}
		return false
	})
	return v
}

func download(t *testing.T, base, token, id string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/tasks/"+id+"/result", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(b, []byte("%PDF-")) {
		t.Fatalf("result: %d %s %.200q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return b
}

func pdfFile(t *testing.T, pdf []byte) string {
	f := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(f, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	out, err := exec.Command("pdftotext", "-enc", "UTF-8", "-layout", pdfFile(t, pdf), "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

func pdfInfo(t *testing.T, pdf []byte) (pages int, size string) {
	t.Helper()
	out, err := exec.Command("pdfinfo", pdfFile(t, pdf)).Output()
	if err != nil {
		t.Fatalf("pdfinfo: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(l, ":")
		switch k {
		case "Pages":
			pages, _ = strconv.Atoi(strings.TrimSpace(v))
		case "Page size":
			size = strings.TrimSpace(v)
		}
	}
	return pages, size
}

func newKey(t *testing.T, base, name string) (key, secret string) {
	t.Helper()
	st, b := call(t, base, adminTok, "POST", "/api/keys", map[string]string{"name": name})
	var k struct{ ID, Name, Key, Secret, CreatedAt string }
	if st != 201 || json.Unmarshal(b, &k) != nil || k.Key == "" || k.Secret == "" || k.ID == "" {
		t.Fatalf("create key: %d %s", st, b)
	}
	return k.Key, k.Secret
}

func metricValue(t *testing.T, base, series string) float64 {
	t.Helper()
	for _, l := range strings.Split(metric(t, base, strings.SplitN(series, "{", 2)[0]), "\n") {
		if name, v, ok := strings.Cut(l, " "); ok && name == series {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// --- rendering, keys, idempotency --------------------------------------

func TestPDFRenderingThroughTheAPI(t *testing.T) {
	site := newSite(t, "127.0.0.2")
	site.page("/zh", `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body><h1>BODY-MARK 你好，世界</h1><p>中文排版测试</p></body></html>`)
	ctrl := pdfServe(t)
	key, _ := newKey(t, ctrl.url, "client A")
	other, _ := newKey(t, ctrl.url, "client B")

	tests := []struct {
		name  string
		body  map[string]any
		check func(t *testing.T, text string, pages int, size string)
	}{
		{"url with Chinese, header, footer, Letter landscape", map[string]any{
			"source": map[string]any{"type": "url", "content": site.url + "/zh"},
			"options": map[string]any{"format": "Letter", "landscape": true,
				"headerTemplate": `<div style="font-size:10px">HDR-MARK</div>`,
				"footerTemplate": `<div style="font-size:10px">FTR-<span class="pageNumber"></span></div>`,
				"margin":         map[string]any{"top": "2cm", "bottom": "2cm"}},
			"priority": "fast"},
			func(t *testing.T, text string, pages int, size string) {
				for _, want := range []string{"BODY-MARK", "你好，世界", "中文排版测试", "HDR-MARK", "FTR-1"} {
					if !strings.Contains(text, want) {
						t.Errorf("text lacks %q:\n%s", want, text)
					}
				}
				if !strings.HasPrefix(size, "792 x 612") {
					t.Errorf("page size %q, want Letter landscape 792 x 612 pts", size)
				}
			}},
		{"inline html, A5, page ranges", map[string]any{
			"source":  map[string]any{"type": "html", "content": `<div style="page-break-after:always">PAGE-ONE</div><div style="page-break-after:always">PAGE-TWO</div><div>PAGE-THREE</div>`},
			"options": map[string]any{"format": "A5", "pageRanges": "2-3"}},
			func(t *testing.T, text string, pages int, size string) {
				if pages != 2 || strings.Contains(text, "PAGE-ONE") || !strings.Contains(text, "PAGE-TWO") || !strings.Contains(text, "PAGE-THREE") {
					t.Errorf("pages %d text %q, want pages 2-3 only", pages, text)
				}
				if !strings.Contains(size, "(A5)") {
					t.Errorf("page size %q, want A5", size)
				}
			}},
		{"wait for selector", map[string]any{
			"source":  map[string]any{"type": "html", "content": `<body><script>setTimeout(()=>{const d=document.createElement('div');d.id='ready';d.textContent='LATE-CONTENT';document.body.appendChild(d)},700)</script>EARLY</body>`},
			"options": map[string]any{"waitForSelector": "#ready", "width": "100mm", "height": "80mm"}},
			func(t *testing.T, text string, pages int, size string) {
				if !strings.Contains(text, "LATE-CONTENT") {
					t.Errorf("text %q lacks the content added after the wait", text)
				}
				if !strings.HasPrefix(size, "283.") {
					t.Errorf("page size %q, want 100mm wide (283.5 pts)", size)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := submit(t, ctrl.url, key, tc.body)
			v := waitEnd(t, ctrl.url, key, id)
			if v.Status != "completed" || v.ResultURL == "" || v.DurationMs == nil {
				t.Fatalf("task %+v", v)
			}
			pdf := download(t, ctrl.url, key, id)
			pages, size := pdfInfo(t, pdf)
			tc.check(t, pdfText(t, pdf), pages, size)
			// A key sees only its own tasks; the admin sees all.
			if st, b := call(t, ctrl.url, other, "GET", "/api/tasks/"+id, nil); st != 404 {
				t.Errorf("another key read the task: %d %s", st, b)
			}
			if st, _ := call(t, ctrl.url, other, "GET", "/api/tasks/"+id+"/result", nil); st != 404 {
				t.Errorf("another key downloaded the PDF: %d", st)
			}
			if st, b := call(t, ctrl.url, adminTok, "GET", "/api/tasks/"+id, nil); st != 200 || !strings.Contains(string(b), `"resultUrl"`) {
				t.Errorf("admin read: %d %s", st, b)
			}
		})
	}

	t.Run("bad input names the field", func(t *testing.T) {
		for _, tc := range []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"source": map[string]any{"type": "pdf", "content": "x"}}, "source.type"},
			{map[string]any{"source": map[string]any{"type": "url", "content": "file:///etc/passwd"}}, "source.content"},
			{map[string]any{"source": map[string]any{"type": "html", "content": "<p>x</p>"}, "options": map[string]any{"scale": 7}}, "options.scale"},
			{map[string]any{"source": map[string]any{"type": "html", "content": "<p>x</p>"}, "priority": "urgent"}, "priority"},
			{map[string]any{"source": map[string]any{"type": "html", "content": "<p>x</p>"}, "bogus": 1}, "bogus"},
		} {
			st, b := call(t, ctrl.url, key, "POST", "/api/tasks/pdf", tc.body)
			if st != 400 || !strings.Contains(string(b), tc.want) {
				t.Errorf("%v: %d %s, want 400 naming %s", tc.body, st, b, tc.want)
			}
		}
		if st, _ := call(t, ctrl.url, "bk_nope", "POST", "/api/tasks/pdf", map[string]any{}); st != 401 {
			t.Errorf("unknown key: %d", st)
		}
	})

	t.Run("idempotency", func(t *testing.T) {
		body := map[string]any{"source": map[string]any{"type": "html", "content": "<p>IDEM-ONE</p>"}, "priority": "fast"}
		first := submit(t, ctrl.url, key, body, "Idempotency-Key", "idem-1")
		waitEnd(t, ctrl.url, key, first)
		st, b := call(t, ctrl.url, key, "POST", "/api/tasks/pdf", body, "Idempotency-Key", "idem-1")
		var again taskView
		_ = json.Unmarshal(b, &again)
		if st != 200 || again.TaskID != first || again.Status != "completed" || again.ResultURL == "" {
			t.Fatalf("repeat: %d %s", st, b)
		}
		body2 := map[string]any{"source": map[string]any{"type": "html", "content": "<p>IDEM-TWO</p>"}}
		if st, b := call(t, ctrl.url, key, "POST", "/api/tasks/pdf", body2, "Idempotency-Key", "idem-1"); st != 422 {
			t.Fatalf("same key, other body: %d %s", st, b)
		}
		// The key is scoped per API key: another key may use it freely.
		if st, _ := call(t, ctrl.url, other, "POST", "/api/tasks/pdf", body2, "Idempotency-Key", "idem-1"); st != 202 {
			t.Fatalf("other API key, same Idempotency-Key: %d", st)
		}

		hitsBefore := metricValue(t, ctrl.url, "idempotency_hits_total")
		body3 := map[string]any{"source": map[string]any{"type": "html", "content": "<p>IDEM-RACE</p>"}, "priority": "slow"}
		var wg sync.WaitGroup
		ids := make([]string, 20)
		codes := make([]int, 20)
		for i := range 20 {
			wg.Go(func() {
				st, b := call(t, ctrl.url, key, "POST", "/api/tasks/pdf", body3, "Idempotency-Key", "idem-race")
				var c struct{ TaskID string }
				_ = json.Unmarshal(b, &c)
				ids[i], codes[i] = c.TaskID, st
			})
		}
		wg.Wait()
		created := 0
		for i := range ids {
			if ids[i] == "" || ids[i] != ids[0] {
				t.Fatalf("answers name different tasks: %v (codes %v)", ids, codes)
			}
			if codes[i] == 202 {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("%d answers said created (202), want 1: %v", created, codes)
		}
		st, b = call(t, ctrl.url, key, "GET", "/api/pdf/tasks?limit=500", nil)
		if n := strings.Count(string(b), `"queue":"pdf.slow"`); st != 200 || n != 1 {
			t.Fatalf("tasks on pdf.slow for this key: %d (%d %s)", n, st, b)
		}
		if got := metricValue(t, ctrl.url, "idempotency_hits_total") - hitsBefore; got != 19 {
			t.Fatalf("idempotency_hits_total grew by %v, want 19", got)
		}
		waitEnd(t, ctrl.url, key, ids[0])
	})

	t.Run("baton pdf command", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "in.html")
		out := filepath.Join(t.TempDir(), "out.pdf")
		_ = os.WriteFile(f, []byte(`<meta charset="utf-8"><h1>CLI-MARK 命令行</h1>`), 0o600)
		cmd := exec.Command(batonBin, "pdf", f, "-o", out, "--controller", ctrl.url, "--api-key", key)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("baton pdf: %v\n%s", err, b)
		}
		b, _ := os.ReadFile(out)
		if text := pdfText(t, b); !strings.Contains(text, "CLI-MARK") || !strings.Contains(text, "命令行") {
			t.Fatalf("text %q", text)
		}
	})
}

// --- egress -------------------------------------------------------------

func TestPDFEgressGuard(t *testing.T) {
	allowed := newSite(t, "127.0.0.2")
	refused := newSite(t, "127.0.0.3")
	refused.page("/", "<p>SECRET</p>")
	refused.page("/x.png", "not an image")
	allowed.mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, refused.url+"/", http.StatusFound)
	})
	allowed.page("/sub", `<h1>SUB-MARK</h1><img src="`+refused.url+`/x.png">`)
	ctrl := pdfServe(t)
	key, _ := newKey(t, ctrl.url, "egress")

	tests := []struct {
		name, url, status, errPart string
		refusedTarget              string
	}{
		{"page on a refused address", refused.url + "/", "failed", "refused", ""},
		{"redirect to a refused address", allowed.url + "/redirect", "failed", "refused", ""},
		{"sub-resource on a refused address", allowed.url + "/sub", "completed", "", refused.url + "/x.png"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "url", "content": tc.url}})
			v := waitEnd(t, ctrl.url, key, id)
			if v.Status != tc.status || !strings.Contains(v.Error, tc.errPart) {
				t.Fatalf("task %+v, want %s with %q", v, tc.status, tc.errPart)
			}
			if tc.refusedTarget != "" {
				found := false
				for _, r := range v.Refused {
					found = found || (r.Target == tc.refusedTarget && strings.Contains(r.Reason, "loopback"))
				}
				if !found {
					t.Fatalf("refused sub-resource not reported: %+v", v.Refused)
				}
				if text := pdfText(t, download(t, ctrl.url, key, id)); !strings.Contains(text, "SUB-MARK") {
					t.Fatalf("page text %q", text)
				}
			}
			t.Logf("%s: %s", v.Status, v.Error)
		})
	}

	t.Run("callback to a refused address", func(t *testing.T) {
		id := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "html", "content": "<p>x</p>"},
			"callback": map[string]any{"url": refused.url + "/hook"}})
		waitEnd(t, ctrl.url, key, id)
		var logs []struct {
			Attempt        int
			ResponseStatus int
			Error          string
		}
		waitFor(t, "the refused callback to be logged", time.Minute, func() bool {
			_, b := call(t, ctrl.url, key, "GET", "/api/tasks/"+id+"/callbacks", nil)
			_ = json.Unmarshal(b, &logs)
			return len(logs) > 0
		})
		if len(logs) != 1 || logs[0].ResponseStatus != 0 || !strings.Contains(logs[0].Error, "refused") {
			t.Fatalf("callback log %+v", logs)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[::1]:8080/", "http://[::ffff:127.0.0.1]/", "http://2130706433/", refused.url + "/"} {
			st, b := call(t, ctrl.url, key, "POST", "/api/tasks/validate", map[string]any{"source": map[string]any{"type": "url", "content": u}})
			var dr struct {
				OK, CanRender, SSRFBlocked bool
				SuggestedQueue             string
			}
			if st != 200 || json.Unmarshal(b, &dr) != nil || !dr.SSRFBlocked || dr.CanRender || dr.OK {
				t.Errorf("%s: %d %s, want ssrfBlocked", u, st, b)
			}
		}
		st, b := call(t, ctrl.url, key, "POST", "/api/tasks/validate", map[string]any{"source": map[string]any{"type": "url", "content": allowed.url + "/sub"}})
		if st != 200 || !strings.Contains(string(b), `"ssrfBlocked":false`) || !strings.Contains(string(b), "blocked: "+refused.url+"/x.png") ||
			!strings.Contains(string(b), `"suggestedQueue":"pdf.`) || !strings.Contains(string(b), `"images":1`) {
			t.Errorf("dry run of a page with a refused image: %d %s", st, b)
		}
	})
	if n := refused.conns.Load(); n != 0 {
		t.Fatalf("the refused server received %d connections", n)
	}
}

// --- callbacks ------------------------------------------------------------

func TestPDFCallbacks(t *testing.T) {
	recv := newSite(t, "127.0.0.2")
	type delivery struct {
		body         []byte
		sig, ts      string
		answeredWith int
	}
	var mu sync.Mutex
	var got []delivery
	recv.mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		status := 200
		if len(got) == 0 {
			status = 500
		}
		got = append(got, delivery{b, r.Header.Get("X-Signature"), r.Header.Get("X-Signature-Timestamp"), status})
		w.WriteHeader(status)
		fmt.Fprintf(w, "seen %d", len(got))
	})
	ctrl := pdfServe(t)
	key, secret := newKey(t, ctrl.url, "hooks")
	id := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "html", "content": "<p>CB</p>"},
		"callback": map[string]any{"url": recv.url + "/hook"}})
	waitEnd(t, ctrl.url, key, id)
	waitFor(t, "the callback after a 500", time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 2 })

	verify := func(d delivery) map[string]any {
		t.Helper()
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(d.body)
		if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); !hmac.Equal([]byte(want), []byte(d.sig)) {
			t.Fatalf("signature %q, want %q", d.sig, want)
		}
		ts, err := strconv.ParseInt(d.ts, 10, 64)
		if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
			t.Fatalf("timestamp %q", d.ts)
		}
		var p map[string]any
		if err := json.Unmarshal(d.body, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mu.Lock()
	first, second := verify(got[0]), verify(got[1])
	mu.Unlock()
	if second["taskId"] != id || second["status"] != "completed" || !strings.HasSuffix(second["resultUrl"].(string), "/api/tasks/"+id+"/result") ||
		second["finishedAt"] == "" || second["sentAt"] == "" || first["taskId"] != id {
		t.Fatalf("payload %v", second)
	}

	st, b := call(t, ctrl.url, key, "POST", "/api/tasks/"+id+"/callback/replay", map[string]any{"attempts": 2, "backoffMultiplier": 2})
	if st != 200 || !strings.Contains(string(b), `"delivered":true`) {
		t.Fatalf("replay: %d %s", st, b)
	}
	mu.Lock()
	if len(got) != 3 {
		t.Fatalf("%d deliveries after the replay", len(got))
	}
	replayed := verify(got[2])
	mu.Unlock()
	if replayed["taskId"] != id || replayed["status"] != "completed" || replayed["finishedAt"] != second["finishedAt"] {
		t.Fatalf("replayed payload %v, want the last one (%v)", replayed, second)
	}
	var logs []struct {
		Attempt        int
		ResponseStatus int
		ResponseBody   string
		Replay         bool
		Error          string
		RequestBody    string
	}
	_, b = call(t, ctrl.url, key, "GET", "/api/tasks/"+id+"/callbacks", nil)
	if err := json.Unmarshal(b, &logs); err != nil || len(logs) != 3 {
		t.Fatalf("callback log: %s", b)
	}
	want := []struct {
		attempt, status int
		replay          bool
	}{{1, 500, false}, {2, 200, false}, {3, 200, true}}
	for i, w := range want {
		if l := logs[i]; l.Attempt != w.attempt || l.ResponseStatus != w.status || l.Replay != w.replay || l.RequestBody == "" || !strings.HasPrefix(l.ResponseBody, "seen") {
			t.Errorf("log %d: %+v, want %+v", i, l, w)
		}
	}
	if v := metricValue(t, ctrl.url, "callback_replay_total"); v != 1 {
		t.Errorf("callback_replay_total = %v", v)
	}
	// Another key can neither read nor replay it.
	otherKey, _ := newKey(t, ctrl.url, "other")
	if st, _ := call(t, ctrl.url, otherKey, "POST", "/api/tasks/"+id+"/callback/replay", nil); st != 404 {
		t.Errorf("other key replay: %d", st)
	}
}

// --- browser failures -------------------------------------------------------

// browserPID asks the controller which Chromium serves its renders.
func browserPID(t *testing.T, base string) int {
	t.Helper()
	_, b := call(t, base, adminTok, "GET", "/api/pdf/browsers", nil)
	var s struct{ Browsers []struct{ PID int } }
	_ = json.Unmarshal(b, &s)
	if len(s.Browsers) == 0 || s.Browsers[0].PID == 0 {
		return 0
	}
	return s.Browsers[0].PID
}

func TestPDFBrowserFailures(t *testing.T) {
	site := newSite(t, "127.0.0.2")
	ctrl := pdfServe(t, "--pdf-slow-threshold", "3s", "--pdf-max-attempts", "3")
	key, _ := newKey(t, ctrl.url, "failures")
	warm := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "html", "content": "<p>warm</p>"}})
	waitEnd(t, ctrl.url, key, warm)

	kill := func() {
		if pid := browserPID(t, ctrl.url); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	var crashHits atomic.Int64
	site.mux.HandleFunc("/crash-once", func(w http.ResponseWriter, r *http.Request) {
		if crashHits.Add(1) == 1 {
			kill() // mid-render: the browser dies while waiting for this page
			time.Sleep(2 * time.Second)
		}
		_, _ = io.WriteString(w, "<h1>SURVIVED</h1>")
	})
	var poisonHits atomic.Int64
	site.mux.HandleFunc("/poison", func(w http.ResponseWriter, r *http.Request) {
		poisonHits.Add(1)
		kill()
		time.Sleep(2 * time.Second)
	})
	site.mux.HandleFunc("/never", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	})
	site.mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Second)
		_, _ = io.WriteString(w, "<h1>SLOW-MARK</h1>")
	})

	t.Run("browser killed mid-render: completes on retry", func(t *testing.T) {
		stalledBefore := metricValue(t, ctrl.url, "conversion_tasks_stalled_total")
		id := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "url", "content": site.url + "/crash-once"}, "priority": "fast"}) // no dry-run probe
		v := waitEnd(t, ctrl.url, key, id)
		// Attempt 2 renders it; on a loaded machine that render may pass the
		// slow threshold and finish as a third attempt on pdf.slow.
		if v.Status != "completed" || v.Attempts < 2 {
			t.Fatalf("task %+v, want completed on a retry", v)
		}
		if text := pdfText(t, download(t, ctrl.url, key, id)); !strings.Contains(text, "SURVIVED") {
			t.Fatalf("text %q", text)
		}
		if metricValue(t, ctrl.url, "conversion_tasks_stalled_total") <= stalledBefore || metricValue(t, ctrl.url, `browser_restart_total{reason="crash"}`) < 1 {
			t.Fatalf("metrics:\n%s\n%s", metric(t, ctrl.url, "conversion_tasks_stalled_total"), metric(t, ctrl.url, "browser_restart_total"))
		}
	})
	t.Run("a page that crashes the browser twice fails as poison", func(t *testing.T) {
		id := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "url", "content": site.url + "/poison"}, "priority": "fast"})
		v := waitEnd(t, ctrl.url, key, id)
		if v.Status != "failed" || v.Attempts != 2 || !strings.Contains(v.Error, "two attempts") {
			t.Fatalf("task %+v, want failed after 2 attempts", v)
		}
	})
	t.Run("a page that never loads ends timeout", func(t *testing.T) {
		id := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "url", "content": site.url + "/never"}, "options": map[string]any{"timeoutMs": 2000}})
		v := waitEnd(t, ctrl.url, key, id)
		if v.Status != "timeout" || v.Attempts != 1 || v.Error == "" {
			t.Fatalf("task %+v, want timeout", v)
		}
	})
	t.Run("a render past the slow threshold moves to pdf.slow", func(t *testing.T) {
		id := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "url", "content": site.url + "/slow"}, "priority": "normal"})
		v := waitEnd(t, ctrl.url, key, id)
		if v.Status != "completed" || v.Queue != "pdf.slow" || v.Attempts != 2 {
			t.Fatalf("task %+v, want completed on pdf.slow", v)
		}
		if text := pdfText(t, download(t, ctrl.url, key, id)); !strings.Contains(text, "SLOW-MARK") {
			t.Fatalf("text %q", text)
		}
	})
}

func TestPDFBrowserRecycling(t *testing.T) {
	tests := []struct {
		name, flag, value, series string
		renders                   int
	}{
		{"after N tasks", "--pdf-max-tasks-per-browser", "2", `browser_restart_total{reason="max_tasks"}`, 3},
		{"above the memory limit", "--pdf-restart-memory-mb", "100", `browser_restart_total{reason="memory"}`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctrl := pdfServe(t, tc.flag, tc.value)
			for i := range tc.renders {
				id := submit(t, ctrl.url, adminTok, map[string]any{"source": map[string]any{"type": "html", "content": fmt.Sprintf("<p>R%d</p>", i)}})
				if v := waitEnd(t, ctrl.url, adminTok, id); v.Status != "completed" {
					t.Fatalf("render %d: %+v", i, v)
				}
			}
			waitFor(t, tc.series, time.Minute, func() bool { return metricValue(t, ctrl.url, tc.series) >= 1 })
			if !regexp.MustCompile(`browser_memory_rss_bytes_count [1-9]`).MatchString(metric(t, ctrl.url, "browser_memory_rss_bytes_count")) {
				t.Errorf("no memory samples: %s", metric(t, ctrl.url, "browser_memory"))
			}
		})
	}
}

// TestPDFRemoteWorker: a controller without in-process workers and a remote
// `baton worker --types pdf.*` (its own browser and egress proxy, the PDF
// uploaded through the artifact route under the lease token) render tasks
// end to end: a page on an allowed address with a sub-resource on a refused
// one, and inline HTML in warm mode. The worker's guard refuses what the
// controller's would.
func TestPDFRemoteWorker(t *testing.T) {
	site := newSite(t, "127.0.0.2")
	refused := newSite(t, "127.0.0.3")
	refused.page("/x.png", "not an image")
	site.page("/doc", `<!doctype html><html><head><meta charset="utf-8"></head><body><h1>REMOTE-MARK 远程</h1><img src="`+refused.url+`/x.png"></body></html>`)
	requirePDFTools(t)
	ctrl := serve(t, "pdf-controller", t.TempDir(), "--egress-allow", "127.0.0.2/32")
	w := runWorker(t, "pdf-worker", ctrl.url, "--types", "pdf.*", "--concurrency", "1",
		"--egress-allow", "127.0.0.2/32", "--pdf-pages-per-browser", "1", "--pdf-mode", "warm")
	key, _ := newKey(t, ctrl.url, "remote")

	id := submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "url", "content": site.url + "/doc"}, "priority": "fast"})
	v := waitEnd(t, ctrl.url, key, id)
	if v.Status != "completed" {
		t.Fatalf("task %+v\nworker log:\n%s", v, w.output())
	}
	if txt := pdfText(t, download(t, ctrl.url, key, id)); !strings.Contains(txt, "REMOTE-MARK") || !strings.Contains(txt, "远程") {
		t.Fatalf("pdf text %q", txt)
	}
	found := false
	for _, r := range v.Refused {
		found = found || r.Target == refused.url+"/x.png"
	}
	if !found || refused.conns.Load() != 0 {
		t.Fatalf("refused sub-resource: %+v, connections to the refused site %d", v.Refused, refused.conns.Load())
	}

	// Inline HTML, and the long-poll on the result.
	id = submit(t, ctrl.url, key, map[string]any{"source": map[string]any{"type": "html", "content": `<p>INLINE-REMOTE</p>`}})
	st, b := call(t, ctrl.url, key, "GET", "/api/tasks/"+id+"/result?wait=60s", nil)
	if st != 200 || !bytes.HasPrefix(b, []byte("%PDF-")) {
		t.Fatalf("result?wait: %d %.200q\nworker log:\n%s", st, b, w.output())
	}
	if txt := pdfText(t, b); !strings.Contains(txt, "INLINE-REMOTE") {
		t.Fatalf("inline pdf text %q", txt)
	}
	w.term(t)
}
