package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton/admin"
	"github.com/batonhq/baton/app"
	"github.com/batonhq/baton/pipeline"
	"github.com/batonhq/baton/queue"
)

const chromiumPath = "/usr/bin/chromium"

// env is one running Baton (sandbox, in-process workers) with the UI
// mounted, and one headless Chromium tab.
type env struct {
	t     *testing.T
	app   *app.App
	pdf   *memPDF
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
		Pipeline: app.PipelineConfig{NoDispatchLoop: true}, NoUI: true,
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	mem := newMemPDF(time.Now())
	ui, err := admin.Mount(a.API, admin.Config{
		Controller: a.Ctrl, Pipeline: a.Pipeline, DB: a.DB, Metrics: a.Registry, PDF: mem,
		SampleEvery: time.Second, RefreshEvery: 2 * time.Second, Logger: log,
	})
	if err != nil {
		t.Fatalf("admin.Mount: %v", err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		_ = ui.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = a.Shutdown(sctx)
	})
	return &env{t: t, app: a, pdf: mem, base: a.URL(), token: a.Tokens.Admin}
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
	req, _ := http.NewRequest(method, e.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
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

	t.Run("PDF tasks: detail and callback replay", func(t *testing.T) {
		const id = "01JDPDF0000000000000000001"
		e.do("PDF list", chromedp.Navigate(e.base+"/ui/pdf"), chromedp.WaitVisible("#pdf-list"))
		if n := run(e, "rows", chromedp.Evaluate[int](`document.querySelectorAll("#pdf-list tbody tr").length`)); n != 3 {
			t.Errorf("%d tasks listed, want 3", n)
		}
		e.shot("pdf-tasks")
		e.do("open task", chromedp.Click(`#pdf-list a[href="/ui/pdf/`+id+`"]`), chromedp.WaitVisible("#callbacks"))
		if !e.eval(`document.querySelector("#task-options").textContent.includes("networkidle")`) {
			t.Error("the task's options are not shown")
		}
		e.shot("pdf-task")
		e.do("replay", chromedp.Click("#replay"), chromedp.WaitVisible("#flash"))
		if n := run(e, "callback rows", chromedp.Evaluate[int](`document.querySelectorAll("#callbacks tbody tr").length`)); n != 3 {
			t.Errorf("%d callback attempts after replay, want 3", n)
		}
		if !e.eval(`document.querySelector("#callbacks tbody tr:last-child").classList.contains("replay")`) {
			t.Error("the replayed attempt is not marked as a replay")
		}
		if rs := e.pdf.replayed(); len(rs) != 1 || rs[0].Attempts != 3 || rs[0].BackoffMultiplier != 2 {
			t.Errorf("backend got replays %+v, want one with attempts 3, multiplier 2", rs)
		}
		ct := run(e, "download", chromedp.Evaluate[string](`fetch("/ui/pdf/`+id+`/result").then(r => r.status + " " + r.headers.get("Content-Type"))`,
			chromedp.EvalAwaitPromise))
		if ct != "200 application/pdf" {
			t.Errorf("download answered %q", ct)
		}
	})

	t.Run("API keys: create shows the secret once, revoke", func(t *testing.T) {
		e.do("create key", chromedp.Navigate(e.base+"/ui/keys"), chromedp.WaitVisible("#create-key"),
			chromedp.SetValue("#key-name", "reports-staging"), chromedp.Submit("#key-name"), chromedp.WaitVisible("#new-key"))
		if s := e.text("#new-key-secret"); !strings.HasPrefix(s, "whsec_") {
			t.Errorf("secret shown = %q", s)
		}
		e.shot("api-keys")
		e.do("reload", chromedp.Navigate(e.base+"/ui/keys"), chromedp.WaitVisible("#key-list"))
		if !e.eval(`document.getElementById("new-key") === null`) {
			t.Error("the secret is shown again after a reload")
		}
		e.do("revoke", chromedp.Click(`tr[data-key="key_01"] button`), chromedp.WaitVisible("#flash"))
		if !e.pdf.revoked("key_01") {
			t.Error("key_01 not revoked")
		}
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

func stepOn(c pipeline.Config, name string) bool {
	s, _ := c.Step(name)
	return s.Enabled
}
