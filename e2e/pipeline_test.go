package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pipeline"
	"github.com/batonhq/baton/sandbox"
)

// pipelineStore is one (queue store, main DB) pairing.
type pipelineStore struct {
	name string
	args func(t *testing.T) []string
}

func pipelineStores() []pipelineStore {
	return []pipelineStore{
		{"sqlite+sqlite", func(*testing.T) []string { return nil }},
		{"redis+mariadb", func(t *testing.T) []string {
			return []string{"--redis", redisURL(), "--redis-namespace", redisNS(t), "--db", mariaDB(t)}
		}},
	}
}

// mariaDB creates a fresh database and returns its --db DSN.
func mariaDB(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("BATON_TEST_MYSQL")
	if dsn == "" {
		dsn = "root@tcp(127.0.0.1:3306)/"
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("BATON_TEST_MYSQL: %v", err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	name := "baton_e2e_" + randHex(6)
	if _, err := db.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("MariaDB at %s is required (BATON_TEST_MYSQL): %v", cfg.Addr, err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP DATABASE " + name); db.Close() })
	user := cfg.User
	if cfg.Passwd != "" {
		user += ":" + cfg.Passwd
	}
	return fmt.Sprintf("mysql://%s@%s/%s", user, cfg.Addr, name)
}

// testDomains makes n names spread over the sandbox's TLDs.
func testDomains(n int, salt string) []string {
	tlds := sandbox.TLDs()
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("d%s%d.%s", salt, i, tlds[i%len(tlds)])
	}
	return out
}

func importDomains(t *testing.T, c *httpapi.Client, names []string) {
	t.Helper()
	body := strings.Join(names, "\n") + "\n"
	req, _ := http.NewRequest("POST", c.Base+"/api/domains", strings.NewReader(body))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res pipeline.ImportResult
	if err := decode(resp, &res); err != nil || res.Added != len(names) || res.InvalidCount != 0 {
		t.Fatalf("import: %+v %v", res, err)
	}
}

func decode(resp *http.Response, v any) error {
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return jsonDecode(resp.Body, v)
}

func setSteps(t *testing.T, c *httpapi.Client, steps ...string) {
	t.Helper()
	var cfg pipeline.Config
	if err := c.Do(context.Background(), "GET", "/api/pipeline", nil, &cfg); err != nil {
		t.Fatal(err)
	}
	on := map[string]bool{}
	for _, s := range steps {
		on[s] = true
	}
	for i := range cfg.Steps {
		cfg.Steps[i].Enabled = on[cfg.Steps[i].Name]
		cfg.Steps[i].RatePerMin = 0
		cfg.Steps[i].MaxAttempts = 8
	}
	cfg.Version = 0
	if err := c.Do(context.Background(), "PUT", "/api/pipeline", cfg, nil); err != nil {
		t.Fatal(err)
	}
}

func scan(t *testing.T, c *httpapi.Client) pipeline.ScanStats {
	t.Helper()
	var st pipeline.ScanStats
	if err := c.Do(context.Background(), "POST", "/api/pipeline/scan", nil, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// settled reports whether no domain task waits or runs.
func settled(c *httpapi.Client) bool {
	qs, err := c.Queues(context.Background())
	if err != nil {
		return false
	}
	for _, q := range qs {
		if strings.HasPrefix(q.Name, "domain.") && q.Ready+q.Running+q.Retry > 0 {
			return false
		}
	}
	return true
}

// ledgerView is what a domain's ledger entry must be, without times, IDs
// and attempt counts (which legitimately differ between runs).
type ledgerView struct {
	Status      ledger.Status
	Blacklisted bool
	Steps       map[string]baton.Outcome
	Evidence    map[string]bool
	Attempts    map[string]int `json:"-"`
}

func readLedger(t *testing.T, c *httpapi.Client, names []string) map[string]ledgerView {
	t.Helper()
	out := make(map[string]ledgerView, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	ch := make(chan string)
	errc := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range ch {
				var d pipeline.DomainView
				if err := c.Do(context.Background(), "GET", "/api/domains/"+n, nil, &d); err != nil {
					select {
					case errc <- err:
					default:
					}
					continue
				}
				v := ledgerView{Status: d.Status, Blacklisted: d.Blacklisted, Steps: map[string]baton.Outcome{}, Evidence: map[string]bool{}, Attempts: map[string]int{}}
				for s, sv := range d.Steps {
					v.Steps[s] = sv.Outcome
					v.Evidence[s] = len(sv.Data) > 2
					v.Attempts[s] = sv.Attempts
				}
				mu.Lock()
				out[n] = v
				mu.Unlock()
			}
		}()
	}
	for _, n := range names {
		ch <- n
	}
	close(ch)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatalf("read ledger: %v", err)
	default:
	}
	return out
}

// checkPaths asserts every domain's recorded steps follow the enabled
// order and stop exactly where the sandbox's outcomes say.
func checkPaths(t *testing.T, got map[string]ledgerView, steps []string) {
	t.Helper()
	bad := 0
	for name, v := range got {
		want := ledgerView{Steps: map[string]baton.Outcome{}, Status: ledger.StatusPassed}
		for _, s := range steps {
			o := sandbox.Expect(name, s)
			want.Steps[s] = o
			if o == baton.OutcomeReject {
				want.Status = ledger.StatusRejected
				break
			}
			if o == baton.OutcomeBlackHit {
				want.Status, want.Blacklisted = ledger.StatusBlacklisted, true
				break
			}
		}
		ok := v.Status == want.Status && v.Blacklisted == want.Blacklisted && len(v.Steps) == len(want.Steps)
		for s, o := range want.Steps {
			if v.Steps[s] != o || !v.Evidence[s] {
				ok = false
			}
		}
		if !ok {
			bad++
			if bad <= 5 {
				t.Errorf("%s: got %+v, want %+v", name, v, want)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d domains off their expected path", bad, len(got))
	}
}

func pipelineServe(t *testing.T, name, dir, addr string, storeArgs []string) *proc {
	args := append([]string{"serve", "--sandbox", "--addr", addr, "--data-dir", dir, "--workers", "48",
		"--admin-token", adminTok, "--worker-token", workerTok, "--scan-interval", "1h",
		"--sandbox-hang", "3s", "--check-timeout", "1s"}, storeArgs...)
	return start(t, name, args...)
}

func runToEnd(t *testing.T, c *httpapi.Client, names []string) {
	t.Helper()
	waitFor(t, "every domain to reach a terminal status", 15*time.Minute, func() bool {
		if !settled(c) {
			return false
		}
		// Domains whose run ended need no new scan; a scan enqueues nothing
		// then. The outbox relay may still be writing the last batch.
		st := scan(t, c)
		if st.Enqueued > 0 || st.InFlight > 0 {
			return false
		}
		var page struct {
			Domains []pipeline.DomainView `json:"domains"`
		}
		for _, s := range []string{"pending", "running", "failed"} {
			if err := c.Do(context.Background(), "GET", "/api/domains?limit=1&status="+s, nil, &page); err != nil || len(page.Domains) > 0 {
				return false
			}
		}
		return true
	})
}

func domainCount() int {
	if testing.Short() {
		return 1000
	}
	return 10000
}

// The proof: imported domains all reach a terminal status along
// the paths the sandbox dictates; enabling a step later runs only that
// step for the domains that can still run; on both store pairings.
func TestPipelineRunsEveryDomainToTheEnd(t *testing.T) {
	for _, ps := range pipelineStores() {
		t.Run(ps.name, func(t *testing.T) {
			ctrl := pipelineServe(t, "controller", t.TempDir(), "127.0.0.1:0", ps.args(t))
			admin := httpapi.NewClient(ctrl.url, adminTok)
			names := testDomains(domainCount(), "p")
			setSteps(t, admin, pipeline.StepRegister)
			importDomains(t, admin, names)
			scan(t, admin)
			runToEnd(t, admin, names)
			first := readLedger(t, admin, names)
			checkPaths(t, first, []string{pipeline.StepRegister})

			// Enable the other six afterwards: only domains that passed
			// register run, and they do not run register again.
			setSteps(t, admin, pipeline.Steps...)
			scan(t, admin)
			runToEnd(t, admin, names)
			second := readLedger(t, admin, names)
			checkPaths(t, second, pipeline.Steps)
			for n, v := range first {
				if v.Status != ledger.StatusPassed && len(second[n].Steps) != 1 {
					t.Fatalf("%s (%s after register) ran more steps: %v", n, v.Status, second[n].Steps)
				}
				if second[n].Attempts[pipeline.StepRegister] != v.Attempts[pipeline.StepRegister] {
					t.Fatalf("%s ran register again", n)
				}
			}
			// Every step's pass, reject, black_hit (where the step has one)
			// and retry paths occurred and were recorded.
			seen := map[string]map[string]int{}
			for _, v := range second {
				for s, o := range v.Steps {
					if seen[s] == nil {
						seen[s] = map[string]int{}
					}
					seen[s][string(o)]++
					if v.Attempts[s] > 1 {
						seen[s]["retried"]++
					}
				}
			}
			for _, s := range pipeline.Steps {
				want := []string{"pass", "reject", "retried"}
				if s == pipeline.StepBaidu || s == pipeline.StepWayback || s == pipeline.StepJucha || s == pipeline.StepJuzi {
					want = append(want, "black_hit")
				}
				for _, w := range want {
					if seen[s][w] == 0 {
						t.Errorf("step %s: no %s path recorded (%v)", s, w, seen[s])
					}
				}
			}
		})
	}
}

// The controller killed with SIGKILL mid-run and restarted: the ledger
// ends identical to an undisturbed run on the same input — nothing lost,
// nothing twice.
func TestPipelineSurvivesControllerKill(t *testing.T) {
	for _, ps := range pipelineStores() {
		t.Run(ps.name, func(t *testing.T) {
			names := testDomains(domainCount()/2, "k")
			steps := []string{pipeline.StepRegister, pipeline.StepWayback}

			// The undisturbed run.
			calm := pipelineServe(t, "calm", t.TempDir(), "127.0.0.1:0", ps.args(t))
			ca := httpapi.NewClient(calm.url, adminTok)
			setSteps(t, ca, steps...)
			importDomains(t, ca, names)
			scan(t, ca)
			runToEnd(t, ca, names)
			want := readLedger(t, ca, names)
			calm.kill()

			// The same input, with the controller killed mid-run.
			dir, addr, args := t.TempDir(), freeAddr(t), ps.args(t)
			c1 := pipelineServe(t, "victim", dir, addr, args)
			a1 := httpapi.NewClient(c1.url, adminTok)
			setSteps(t, a1, steps...)
			importDomains(t, a1, names)
			scan(t, a1)
			waitFor(t, "a third of the domains to finish", 10*time.Minute, func() bool {
				n := 0
				for _, s := range []string{"passed", "rejected", "blacklisted"} {
					var page struct {
						Domains []pipeline.DomainView `json:"domains"`
					}
					if err := a1.Do(context.Background(), "GET", "/api/domains?limit=5000&status="+s, nil, &page); err != nil {
						return false
					}
					n += len(page.Domains)
				}
				return n >= len(names)/3
			})
			c1.kill()
			c2 := pipelineServe(t, "restarted", dir, addr, args)
			a2 := httpapi.NewClient(c2.url, adminTok)
			scan(t, a2)
			runToEnd(t, a2, names)
			got := readLedger(t, a2, names)
			diffs := 0
			for n, w := range want {
				g := got[n]
				same := g.Status == w.Status && g.Blacklisted == w.Blacklisted && len(g.Steps) == len(w.Steps)
				for s, o := range w.Steps {
					if g.Steps[s] != o || g.Evidence[s] != w.Evidence[s] {
						same = false
					}
				}
				if !same {
					diffs++
					if diffs <= 5 {
						t.Errorf("%s: undisturbed %+v, after kill %+v", n, w, g)
					}
				}
			}
			if diffs > 0 || len(got) != len(want) {
				t.Fatalf("%d domains differ after the kill (%d vs %d read)", diffs, len(got), len(want))
			}
			checkPaths(t, got, steps)
		})
	}
}

// A misconfigured provider key reaches the operator: the check retries and
// GET /api/alerts names the problem.
func TestMisconfiguredKeyRaisesAlert(t *testing.T) {
	sb, err := sandbox.Start(context.Background(), sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	ep := sb.Endpoints()
	prov := fmt.Sprintf(`{"chinaz":{"baseUrl":%q,"api":"baiduweight","key":"wrong-key"}}`, ep.Chinaz)
	path := t.TempDir() + "/providers.json"
	if err := os.WriteFile(path, []byte(prov), 0o600); err != nil {
		t.Fatal(err)
	}
	ctrl := serve(t, "controller", t.TempDir(), "--workers", "4", "--providers", path, "--egress-allow", "127.0.0.1/32", "--scan-interval", "1h")
	admin := httpapi.NewClient(ctrl.url, adminTok)
	setSteps(t, admin, pipeline.StepChinaz)
	importDomains(t, admin, []string{"alert-me.com"})
	scan(t, admin)
	var al struct {
		Alerts []pipeline.Alert `json:"alerts"`
	}
	waitFor(t, "the chinaz alert", 60*time.Second, func() bool {
		return admin.Do(context.Background(), "GET", "/api/alerts", nil, &al) == nil && len(al.Alerts) > 0
	})
	a := al.Alerts[0]
	if a.Code != "chinaz_config" || a.Step != pipeline.StepChinaz || a.Message == "" || strings.Contains(a.Message, "wrong-key") {
		t.Fatalf("alert %+v", a)
	}
	ti := tasksOf(t, admin, "domain.chinaz")
	if ti.Retry+ti.Ready+ti.Running == 0 {
		t.Fatalf("the chinaz task should be waiting for its retry: %+v", ti)
	}
}

func tasksOf(t *testing.T, c *httpapi.Client, q string) queueStat {
	qs, err := c.Queues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range qs {
		if s.Name == q {
			return queueStat{Ready: s.Ready, Running: s.Running, Retry: s.Retry}
		}
	}
	return queueStat{}
}

type queueStat struct{ Ready, Running, Retry int64 }
