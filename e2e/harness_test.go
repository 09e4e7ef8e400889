// Package e2e runs the real baton binary: controllers and worker
// processes on loopback, killed and restarted, against the real stores.
package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/internal/redisns"
)

var batonBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "baton-e2e-bin-")
	if err != nil {
		panic(err)
	}
	batonBin = filepath.Join(dir, "baton")
	out, err := exec.Command("go", "build", "-o", batonBin, "../cmd/baton").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build baton: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func redisURL() string {
	if u := os.Getenv("BATON_TEST_REDIS"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redisNS returns a fresh namespace that is dropped when the test ends.
func redisNS(t *testing.T) string {
	ns := "e2e-" + randHex(6)
	t.Cleanup(func() {
		if _, err := redisns.Drop(context.Background(), redisURL(), ns); err != nil {
			t.Errorf("drop redis namespace %s: %v", ns, err)
		}
	})
	return ns
}

// storeKind is one queue store configuration the tests run against.
type storeKind struct {
	name string
	args func(t *testing.T) []string
}

func stores() []storeKind {
	return []storeKind{
		{"sqlite", func(*testing.T) []string { return nil }},
		{"redis", func(t *testing.T) []string {
			return []string{"--redis", redisURL(), "--redis-namespace", redisNS(t)}
		}},
	}
}

// proc is a running baton process.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	name string
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{}
	url  string
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, done: make(chan struct{})}
	p.cmd = exec.Command(batonBin, args...)
	p.cmd.Env = append(os.Environ(), "BATON_LOG_LEVEL=warn")
	stdout, _ := p.cmd.StdoutPipe()
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	urlc := make(chan string, 1)
	go p.collect(stdout, urlc)
	go p.collect(stderr, nil)
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	if args[0] == "serve" {
		select {
		case p.url = <-urlc:
		case <-p.done:
			t.Fatalf("%s exited at start:\n%s", name, p.output())
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not start:\n%s", name, p.output())
		}
	}
	return p
}

func (p *proc) collect(r io.Reader, urlc chan string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.log.WriteString(line + "\n")
		p.mu.Unlock()
		if urlc != nil && strings.HasPrefix(line, "baton listening on ") {
			urlc <- strings.TrimPrefix(line, "baton listening on ")
		}
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// term sends SIGTERM and waits for a clean exit.
func (p *proc) term(t *testing.T) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop on SIGTERM:\n%s", p.name, p.output())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%s exited %d after SIGTERM:\n%s", p.name, code, p.output())
	}
}

const (
	adminTok  = "e2e-admin-token"
	workerTok = "e2e-worker-token"
)

func serve(t *testing.T, name, dataDir string, extra ...string) *proc {
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--workers", "0",
		"--admin-token", adminTok, "--worker-token", workerTok}, extra...)
	return start(t, name, args...)
}

func runWorker(t *testing.T, name, url string, extra ...string) *proc {
	args := append([]string{"worker", "--controller", url, "--worker-token", workerTok, "--id", name, "--claim-wait", "1s"}, extra...)
	return start(t, name, args...)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tasksByState reads every task and groups the IDs by state.
func tasksByState(t *testing.T, c *httpapi.Client, ids []string) (map[baton.State][]string, map[string]baton.TaskInfo) {
	t.Helper()
	by := map[baton.State][]string{}
	infos := map[string]baton.TaskInfo{}
	for _, id := range ids {
		ti, err := c.Task(context.Background(), id)
		if err != nil {
			by["error"] = append(by["error"], id)
			continue
		}
		by[ti.Status] = append(by[ti.Status], id)
		infos[id] = ti
	}
	return by, infos
}
