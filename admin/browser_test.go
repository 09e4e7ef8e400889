package admin_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/app"
	"github.com/batonhq/baton/pipeline"
	"github.com/batonhq/baton/queue"
)

const chromiumPath = "/usr/bin/chromium"

// env is one running Baton (sandbox, in-process workers, the PDF service)
// with the UI mounted by app as baton serve mounts it, and one headless
// Chromium tab.
type env struct {
	t     *testing.T
	app   *app.App
	base  string
	token string
	tab   context.Context
}

func startBaton(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(ctx, app.Config{
		Addr: "127.0.0.1:0", DataDir: t.TempDir(), Workers: 2, Sandbox: true, Logger: log,
		Pipeline: app.PipelineConfig{NoDispatchLoop: true},
		// The PDF callbacks go to the test's receiver on 127.0.0.2, the only
		// private address the service may reach.
		EgressAllow: "127.0.0.2/32",
		PDF:         app.PDFConfig{Browsers: 1, PagesPerBrowser: 1, ChromiumPath: chromiumPath},
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	if a.UI == nil || a.PDF == nil {
		t.Fatal("app.New did not mount the UI with the PDF service")
	}
	if err := a.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = a.Shutdown(sctx) // closes a.UI too
	})
	return &env{t: t, app: a, base: a.URL(), token: a.Tokens.Admin}
}

// hook is a callback receiver on 127.0.0.2 (allowed by EgressAllow); it
// keeps every request and answers 200.
type hook struct {
	url  string
	mu   sync.Mutex
	reqs []hookReq
}

type hookReq struct {
	body      []byte
	signature string
	timestamp string
}

func startHook(t *testing.T) *hook {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.2: %v", err)
	}
	h := &hook{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.reqs = append(h.reqs, hookReq{body: b, signature: r.Header.Get("X-Signature"), timestamp: r.Header.Get("X-Signature-Timestamp")})
		h.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/pdf-done"
	return h
}

func (h *hook) received() []hookReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookReq(nil), h.reqs...)
}

// signedBy checks SPEC §6's signature independently of Baton's code:
// X-Signature: sha256=HEX(HMAC_SHA256(secret, body)).
func (r hookReq) signedBy(secret string) bool {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(r.body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(r.signature))
}

// startBrowser starts headless Chromium; a missing browser fails the test.
func (e *env) startBrowser() {
	t := e.t
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("Chromium is required at %s (apt-get install chromium): %v", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("lang", "en-US"), chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// The first call starts the browser and must not carry a timeout.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	e.tab = bctx
}

// do runs browser actions with a deadline.
func (e *env) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.tab, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

func run[T any](e *env, what string, a chromedp.Action[T]) T {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.tab, 45*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
	return v
}

func (e *env) text(sel string) string { return run(e, "text of "+sel, chromedp.Text(sel)) }

func (e *env) eval(js string) bool {
	e.t.Helper()
	return run(e, "evaluate "+js, chromedp.Evaluate[bool](js))
}

// shot saves a full-page PNG to docs/screenshots when
// BATON_UPDATE_SCREENSHOTS=1.
func (e *env) shot(name string) {
	e.t.Helper()
	if os.Getenv("BATON_UPDATE_SCREENSHOTS") != "1" {
		return
	}
	png := run(e, "screenshot "+name, chromedp.FullScreenshot(100))
	p := filepath.Join("..", "docs", "screenshots", name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		e.t.Fatalf("write %s: %v", p, err)
	}
}

// api calls the JSON API with the admin token.
func (e *env) api(method, path string, out any) {
	e.t.Helper()
	e.call(e.token, method, path, nil, http.StatusOK, out)
}

// call sends body (JSON, when not nil) with token and wants status back.
func (e *env) call(token, method, path string, body any, want int, out any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

func (e *env) pipelineConfig() pipeline.Config {
	var c pipeline.Config
	e.api("GET", "/api/pipeline", &c)
	return c
}

func (e *env) queues() map[string]queue.QueueStat {
	var qs []queue.QueueStat
	e.api("GET", "/api/queues", &qs)
	m := map[string]queue.QueueStat{}
	for _, q := range qs {
		m[q.Name] = q
	}
	return m
}

// waitFor polls cond (an API read) until it holds; the deadline is a
// safety net, not an assertion on speed.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The whole operator journey through the UI, in one browser and one
// Baton, step by step.
func TestAdminUIInBrowser(t *testing.T) {
	e := startBaton(t)
	e.startBrowser()
	domains := []string{"alpha-clean-ok-1.com", "beta-black-1.com", "delta-many-ok-1.org"}

	t.Run("sign in", func(t *testing.T) {
		e.do("open UI", chromedp.Navigate(e.base+"/"), chromedp.WaitVisible("#login-form"))
		if loc := run(e, "location", chromedp.Location()); !strings.Contains(loc, "/ui/login?next=") {
			t.Fatalf("unauthenticated / went to %s, want the sign-in page", loc)
		}
		e.shot("sign-in")
		e.do("wrong token", chromedp.SendKeys("#token", "not-the-token"), chromedp.Click("#sign-in"), chromedp.WaitVisible("#login-error"))
		e.do("right token", chromedp.SetValue("#token", e.token), chromedp.Click("#sign-in"), chromedp.WaitVisible("#live"))
		if e.eval(`document.cookie.includes("baton_session")`) {
			t.Error("the session cookie is readable from script; want HttpOnly")
		}
	})

	t.Run("pipeline: untick and tick steps", func(t *testing.T) {
		before := e.pipelineConfig()
		if !stepOn(before, "register") || stepOn(before, "juzi") {
			t.Fatalf("unexpected starting configuration: %v", before.Enabled())
		}
		e.do("open pipeline", chromedp.Navigate(e.base+"/ui/pipeline"), chromedp.WaitVisible("#pipeline-form"))
		e.shot("pipeline")
		e.do("untick register, tick juzi, save",
			chromedp.Click("#enabled_register"), chromedp.Click("#enabled_juzi"), chromedp.Click("#save-pipeline"),
			chromedp.WaitVisible("#flash"))
		after := e.pipelineConfig()
		if got, want := strings.Join(after.Enabled(), ","), "wayback,juzi"; got != want {
			t.Fatalf("GET /api/pipeline enabled = %s, want %s", got, want)
		}
		if after.Version <= before.Version {
			t.Errorf("version %d after save, was %d", after.Version, before.Version)
		}
		if e.eval(`document.getElementById("enabled_register").checked`) || !e.eval(`document.getElementById("enabled_juzi").checked`) {
			t.Error("the page does not show the saved ticks")
		}
	})

	t.Run("pipeline: bad rule shows inline error, nothing saved", func(t *testing.T) {
		before := e.pipelineConfig()
		e.do("bad decide",
			chromedp.Navigate(e.base+"/ui/pipeline"), chromedp.WaitVisible("#decide_wayback"),
			chromedp.Click("#enabled_baidu"), // a change that must not be saved either
			chromedp.SetValue("#decide_wayback", `data.captures < `), chromedp.Click("#save-pipeline"),
			chromedp.WaitVisible("#error-wayback"))
		if msg := e.text("#error-wayback"); !strings.Contains(msg, "decide") {
			t.Errorf("inline error %q does not name the decide rule", msg)
		}
		if v := run(e, "decide value", chromedp.Value("#decide_wayback")); v != "data.captures <" {
			t.Errorf("the form lost the operator's input: %q", v)
		}
		e.shot("pipeline-error")
		after := e.pipelineConfig()
		if after.Version != before.Version || stepOn(after, "baidu") {
			t.Fatalf("a refused form changed the configuration: version %d → %d, enabled %v", before.Version, after.Version, after.Enabled())
		}
		if sc, _ := after.Step("wayback"); sc.Rules.Decide != "" {
			t.Fatalf("refused decide rule was stored: %q", sc.Rules.Decide)
		}
	})

	t.Run("import by paste, invalid lines shown", func(t *testing.T) {
		// Hold the first step's queue so the dispatched tasks can be seen.
		e.api("POST", "/api/queues/domain.wayback/pause", nil)
		paste := strings.Join([]string{domains[0], "bad domain!", domains[1], "gamma-clean-2.net,2026-13-45", domains[2] + ",2027-01-15,ui-test"}, "\n")
		e.do("import", chromedp.Navigate(e.base+"/ui/domains"), chromedp.WaitVisible("#import-form"),
			chromedp.SetValue("#import-text", paste), chromedp.Click("#import-submit"), chromedp.WaitVisible("#import-result"))
		if got := e.text("#import-added"); !strings.HasSuffix(got, " 3") {
			t.Errorf("added badge %q, want 3", got)
		}
		rows := run(e, "invalid rows", chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll("#invalid-lines tbody tr")).map(r => r.cells[0].textContent + "|" + r.cells[2].textContent)`))
		if len(rows) != 2 || !strings.HasPrefix(rows[0], "2|") || !strings.HasPrefix(rows[1], "4|") {
			t.Fatalf("invalid lines shown = %q, want lines 2 and 4 with reasons", rows)
		}
		for _, r := range rows {
			if strings.TrimSpace(strings.SplitN(r, "|", 2)[1]) == "" {
				t.Errorf("invalid line %q has no reason", r)
			}
		}
		e.shot("domains")
	})

	t.Run("dispatch follows the ticked steps", func(t *testing.T) {
		e.api("POST", "/api/pipeline/scan", nil)
		e.waitFor("3 tasks on domain.wayback", func() bool {
			q := e.queues()["domain.wayback"]
			return q.Ready+q.Running+q.Retry == 3
		})
		for name, q := range e.queues() {
			if name == "domain.wayback" {
				continue
			}
			if strings.HasPrefix(name, "domain.") && q.Ready+q.Running+q.Retry != 0 {
				t.Errorf("queue %s holds %d tasks; only the first ticked step (wayback) should", name, q.Ready+q.Running+q.Retry)
			}
		}
	})

	t.Run("dashboard resume, processing, domain detail", func(t *testing.T) {
		resume := `tr[data-queue="domain.wayback"] button[data-action="resume"]`
		e.do("resume from the dashboard", chromedp.Navigate(e.base+"/ui/"), chromedp.WaitVisible(resume),
			chromedp.Click(resume), chromedp.WaitVisible("#flash"))
		if e.queues()["domain.wayback"].Paused {
			t.Fatal("domain.wayback still paused after Resume")
		}
		want := map[string]string{domains[0]: "pass", domains[1]: "black_hit", domains[2]: "pass"}
		for name, outcome := range want {
			e.waitFor(name+" wayback result", func() bool {
				var d pipeline.DomainView
				e.api("GET", "/api/domains/"+name, &d)
				return d.Steps["wayback"].Outcome != ""
			})
			var d pipeline.DomainView
			e.api("GET", "/api/domains/"+name, &d)
			if got := string(d.Steps["wayback"].Outcome); got != outcome {
				t.Errorf("%s wayback outcome %s, want %s (sandbox marker)", name, got, outcome)
			}
		}
		// The passed ones go on to juzi, the next ticked step.
		for _, name := range []string{domains[0], domains[2]} {
			e.waitFor(name+" juzi result", func() bool {
				var d pipeline.DomainView
				e.api("GET", "/api/domains/"+name, &d)
				return d.Steps["juzi"].Outcome != ""
			})
		}
		var black pipeline.DomainView
		e.api("GET", "/api/domains/"+domains[1], &black)
		if _, ran := black.Steps["juzi"]; ran {
			t.Errorf("%s was blacklisted at wayback but ran juzi", domains[1])
		}

		e.do("domain detail", chromedp.Navigate(e.base+"/ui/domains/"+domains[1]), chromedp.WaitVisible("#result-wayback"),
			chromedp.WaitVisible(`#result-wayback [data-outcome="black_hit"]`))
		if !e.eval(`document.querySelectorAll("#result-wayback mark").length > 0`) {
			t.Error("no highlighted word hit on the black domain's wayback step")
		}
		if !e.eval(`Array.from(document.querySelectorAll("#result-wayback a")).some(a => a.href.startsWith("https://web.archive.org/web/"))`) {
			t.Error("no link to a Wayback snapshot")
		}
		if !e.eval(`document.querySelector("#result-wayback pre").textContent.includes("\n  \"")`) {
			t.Error("evidence is not pretty-printed JSON")
		}
		if e.eval(`document.querySelectorAll("#runs tbody tr code").length` + " < 1") {
			t.Error("no run in the run history")
		}
		e.shot("domain-detail")

		e.do("search by prefix", chromedp.Navigate(e.base+"/ui/domains?q=beta"), chromedp.WaitVisible("#domain-list"))
		if got := e.text("#domain-list tbody"); !strings.Contains(got, domains[1]) || strings.Contains(got, domains[0]) {
			t.Errorf("prefix search shows %q", got)
		}
		e.do("filter by status and step", chromedp.Navigate(e.base+"/ui/domains"), chromedp.WaitVisible("#search-form"),
			chromedp.SetValue("#status", "blacklisted"), chromedp.SetValue("#step", "wayback"))
		run(e, "submit the filter", chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Submit("#q")))
		if loc := run(e, "location", chromedp.Location()); !strings.Contains(loc, "status=blacklisted") || !strings.Contains(loc, "step=wayback") {
			t.Fatalf("filter went to %s", loc)
		}
		if n := run(e, "rows", chromedp.Evaluate[int](`document.querySelectorAll("#domain-list tbody tr").length`)); n != 1 {
			t.Errorf("status+step filter shows %d rows, want 1", n)
		}

		e.do("dashboard with data", chromedp.Navigate(e.base+"/ui/"), chromedp.WaitVisible(`#funnel .frow[data-step="wayback"] rect.black`))
		e.shot("dashboard")
		e.do("dashboard refreshes itself", chromedp.WaitReady(`#live[data-refreshed]`))
	})

	t.Run("CSRF: a post without the token is refused", func(t *testing.T) {
		e.do("open dashboard", chromedp.Navigate(e.base+"/ui/"), chromedp.WaitVisible("#live"))
		for _, body := range []string{"", "csrf=wrong"} {
			status := run(e, "fetch", chromedp.Evaluate[int](fmt.Sprintf(`fetch("/ui/queues/domain.juzi/pause", {method: "POST",
				headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: %q, credentials: "same-origin"}).then(r => r.status)`, body),
				chromedp.EvalAwaitPromise))
			if status != http.StatusForbidden {
				t.Errorf("POST with body %q answered %d, want 403", body, status)
			}
		}
		if e.queues()["domain.juzi"].Paused {
			t.Fatal("a POST without a CSRF token paused a queue")
		}
		// Without a session at all, too.
		resp, err := http.PostForm(e.base+"/ui/queues/domain.juzi/pause", url.Values{"csrf": {"x"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST without a session answered %d, want 403", resp.StatusCode)
		}
	})

	// The key is made on the keys page: the PDF steps submit with it and
	// check the callbacks' signatures with its secret.
	var key struct{ id, value, secret string }
	t.Run("API keys: create shows the secret once", func(t *testing.T) {
		e.do("create key", chromedp.Navigate(e.base+"/ui/keys"), chromedp.WaitVisible("#create-key"),
			chromedp.SetValue("#key-name", "invoices-prod"), chromedp.Submit("#key-name"), chromedp.WaitVisible("#new-key"))
		key.id = strings.TrimSpace(e.text("#new-key-id"))
		key.value = strings.TrimSpace(e.text("#new-key-value"))
		key.secret = strings.TrimSpace(e.text("#new-key-secret"))
		if key.id == "" || !strings.HasPrefix(key.value, "bk_") || !strings.HasPrefix(key.secret, "whsec_") {
			t.Fatalf("new key shown as id %q, key %q, secret %q", key.id, key.value, key.secret)
		}
		e.shot("api-keys")
		e.do("reload", chromedp.Navigate(e.base+"/ui/keys"), chromedp.WaitVisible(`#key-list tr[data-key="`+key.id+`"]`))
		if !e.eval(`document.getElementById("new-key") === null`) || e.eval(`document.body.innerHTML.includes(`+jsString(key.secret)+`)`) {
			t.Error("the secret is shown again after a reload")
		}
		e.call(key.value, "GET", "/api/pdf/tasks", nil, http.StatusOK, nil) // the key works on the API
	})

	t.Run("PDF: a real conversion, its detail, download and callback replay", func(t *testing.T) {
		if key.secret == "" {
			t.Fatal("no API key from the keys page")
		}
		h := startHook(t)
		var created struct{ TaskID, Status, Queue string }
		e.call(key.value, "POST", "/api/tasks/pdf", map[string]any{
			"source": map[string]string{"type": "html", "content": invoiceHTML},
			"options": map[string]any{"format": "A4", "printBackground": true, "waitForSelector": "#total",
				"margin": map[string]string{"top": "1cm", "bottom": "1cm"}},
			"callback": map[string]string{"url": h.url},
			"priority": "fast",
		}, http.StatusAccepted, &created)
		id := created.TaskID
		if id == "" || created.Queue != "pdf.fast" {
			t.Fatalf("POST /api/tasks/pdf answered %+v", created)
		}
		e.waitFor("the conversion to finish", func() bool {
			var v struct{ Status, Error string }
			e.call(key.value, "GET", "/api/tasks/"+id, nil, http.StatusOK, &v)
			if st := baton.State(v.Status); st.Terminal() && st != baton.StateCompleted {
				t.Fatalf("conversion ended %s: %s", v.Status, v.Error)
			}
			return v.Status == string(baton.StateCompleted)
		})
		// The callback is sent after the ledger records the end; its log row
		// comes after the receiver's answer.
		e.waitFor("the first callback in the log", func() bool {
			var log []struct{ Attempt int }
			e.call(key.value, "GET", "/api/tasks/"+id+"/callbacks", nil, http.StatusOK, &log)
			return len(log) > 0
		})
		got := h.received()
		if len(got) != 1 {
			t.Fatalf("the receiver got %d callbacks, want 1", len(got))
		}
		checkCallback(t, got[0], key.secret, id)

		link := `#pdf-list a[href="/ui/pdf/` + id + `"]`
		e.do("PDF list", chromedp.Navigate(e.base+"/ui/pdf"), chromedp.WaitVisible(link))
		row := run(e, "task row", chromedp.Evaluate[string](`document.querySelector(`+jsString(link)+`).closest("tr").textContent`))
		for _, want := range []string{"completed", "pdf.fast", "invoices-prod", "html"} {
			if !strings.Contains(row, want) {
				t.Errorf("the list's row %q does not show %q", row, want)
			}
		}
		e.shot("pdf-tasks")

		e.do("open task", chromedp.Click(link), chromedp.WaitVisible("#callbacks"))
		if st := strings.TrimSpace(e.text("#task-status")); st != "completed" {
			t.Errorf("detail shows status %q", st)
		}
		if opts := e.text("#task-options"); !strings.Contains(opts, `"waitForSelector": "#total"`) || !strings.Contains(opts, `"format": "A4"`) {
			t.Errorf("the task's options are not shown: %q", opts)
		}
		if n := run(e, "timings shown", chromedp.Evaluate[int](`Array.from(document.querySelectorAll("#timings dd")).filter(d => d.textContent.trim() !== "–").length`)); n < 5 {
			// created, started, finished, render and total time; the queue wait
			// may round to nothing.
			t.Errorf("%d timings shown, want at least 5: %q", n, e.text("#timings"))
		}
		if v := e.text("#render-time"); strings.TrimSpace(v) == "–" {
			t.Error("no render time")
		}
		if n := run(e, "callback rows", chromedp.Evaluate[int](`document.querySelectorAll("#callbacks tbody tr").length`)); n != 1 {
			t.Fatalf("%d callback rows before the replay, want 1", n)
		}
		first := e.text("#callbacks tbody tr:first-child")
		if !strings.Contains(first, "200") || !strings.Contains(first, h.url) || e.eval(`document.querySelector("#callbacks tbody tr").classList.contains("replay")`) {
			t.Errorf("the first delivery's row %q: want 200, the receiver's URL, no replay mark", first)
		}

		href := run(e, "download link", chromedp.AttributeValue("#download", "href")).Value
		if href == "" {
			t.Fatal("no Download link on the completed task")
		}
		resp, body := e.withSession(href)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(body, []byte("%PDF-")) {
			t.Errorf("download answered %d %s, %d bytes starting %q", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), body[:min(len(body), 8)])
		}
		if resp, err := noRedirect.Get(e.base + href); err != nil {
			t.Error(err)
		} else if resp.Body.Close(); resp.StatusCode == http.StatusOK {
			t.Error("the PDF downloads without a session")
		}

		e.do("replay", chromedp.Click("#replay"), chromedp.WaitVisible("#flash"), chromedp.WaitVisible("#callbacks"))
		e.waitFor("the replayed callback at the receiver", func() bool { return len(h.received()) == 2 })
		replayed := h.received()[1]
		checkCallback(t, replayed, key.secret, id)
		if n := run(e, "callback rows", chromedp.Evaluate[int](`document.querySelectorAll("#callbacks tbody tr").length`)); n != 2 {
			t.Fatalf("%d callback rows after the replay, want 2", n)
		}
		if !e.eval(`document.querySelector("#callbacks tbody tr:last-child").classList.contains("replay")`) {
			t.Error("the replayed delivery is not marked as a replay")
		}
		if c := strings.TrimSpace(e.text("#callbacks tbody tr:last-child td:first-child")); !strings.HasPrefix(c, "2") {
			t.Errorf("the replay's row is numbered %q, want attempt 2", c)
		}
		var log []struct {
			Attempt        int
			Replay         bool
			ResponseStatus int
		}
		e.call(key.value, "GET", "/api/tasks/"+id+"/callbacks", nil, http.StatusOK, &log)
		if len(log) != 2 || log[0].Replay || !log[1].Replay || log[1].Attempt != 2 || log[1].ResponseStatus != http.StatusOK {
			t.Errorf("callback log %+v, want the delivery then one replay answered 200", log)
		}
		e.shot("pdf-task")
	})

	t.Run("API keys: revoke", func(t *testing.T) {
		if key.id == "" {
			t.Fatal("no API key from the keys page")
		}
		revoke := `tr[data-key="` + key.id + `"] button`
		e.do("revoke", chromedp.Navigate(e.base+"/ui/keys"), chromedp.WaitVisible(revoke), chromedp.Click(revoke), chromedp.WaitVisible("#flash"))
		if !e.eval(`document.querySelector(` + jsString(`tr[data-key="`+key.id+`"] .badge.bad`) + `) !== null`) {
			t.Error("the key is not shown as revoked")
		}
		e.call(key.value, "GET", "/api/pdf/tasks", nil, http.StatusUnauthorized, nil)
	})

	t.Run("Chinese, phone width, errors, sign out", func(t *testing.T) {
		e.do("open pipeline", chromedp.Navigate(e.base+"/ui/pipeline"), chromedp.WaitVisible("#lang-switch"))
		run(e, "switch to Chinese", chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click("#lang-switch")))
		e.do("Chinese page", chromedp.WaitVisible("#pipeline-form"))
		if h := e.text("h1"); h != "检测流程" {
			t.Errorf("Chinese title %q", h)
		}
		e.shot("pipeline-zh")
		e.do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
			chromedp.Navigate(e.base+"/ui/"), chromedp.WaitVisible("#live"))
		if e.eval(`document.documentElement.scrollWidth > window.innerWidth + 1`) {
			t.Error("the dashboard scrolls sideways on a phone")
		}
		e.shot("dashboard-phone")
		e.do("laptop", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(e.base+"/ui/domains/no-such-domain.com"),
			chromedp.WaitVisible("#error-message"))
		if msg := e.text("#error-message"); strings.Contains(msg, "goroutine") || !strings.Contains(msg, "not found") {
			t.Errorf("error page says %q", msg)
		}
		e.do("sign out", chromedp.Navigate(e.base+"/ui/"), chromedp.WaitVisible("#sign-out"), chromedp.Click("#sign-out"),
			chromedp.WaitVisible("#login-form"))
		e.do("signed out", chromedp.Navigate(e.base+"/ui/pipeline"), chromedp.WaitVisible("#login-form"))
	})
}

// invoiceHTML is the document converted; #total is what the render waits for.
const invoiceHTML = `<!doctype html><html><head><meta charset="utf-8"><title>Invoice 2026-11-0042</title>
<style>body{font:14px sans-serif;margin:2cm}h1{color:#1d4ed8}td{padding:4px 12px;border-bottom:1px solid #ddd}</style></head>
<body><h1>Invoice 2026-11-0042</h1><table><tr><td>Domain checks</td><td>1,200</td></tr><tr><td>PDF renders</td><td>340</td></tr></table>
<p id="total"><strong>Total: 1,540</strong></p></body></html>`

// checkCallback checks a received callback: signed with the key's secret,
// a timestamp, and the task's completion in the body.
func checkCallback(t *testing.T, r hookReq, secret, id string) {
	t.Helper()
	if !r.signedBy(secret) {
		t.Errorf("callback signature %q does not match HMAC-SHA256 of the body with the key's secret", r.signature)
	}
	if r.timestamp == "" {
		t.Error("callback without X-Signature-Timestamp")
	}
	var p struct{ TaskID, Status, ResultURL string }
	if err := json.Unmarshal(r.body, &p); err != nil || p.TaskID != id || p.Status != "completed" || !strings.HasSuffix(p.ResultURL, "/api/tasks/"+id+"/result") {
		t.Errorf("callback body %s (%v), want task %s completed with its resultUrl", r.body, err, id)
	}
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// withSession GETs path with the browser's cookies (the HttpOnly session
// cookie included), not following redirects.
func (e *env) withSession(path string) (*http.Response, []byte) {
	e.t.Helper()
	cookies := run(e, "cookies", func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{e.base + "/ui/"}})
		return res.Cookies, err
	})
	req, _ := http.NewRequest("GET", e.base+path, nil)
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	return resp, b
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func stepOn(c pipeline.Config, name string) bool {
	s, _ := c.Step(name)
	return s.Enabled
}
