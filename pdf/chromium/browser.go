package chromium

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// baseFlags are always passed to Chromium. The background-networking flags
// stop it from calling outside hosts on its own.
var baseFlags = []string{
	"--headless",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-extensions",
	"--disable-breakpad",
	"--disable-default-apps",
	"--disable-client-side-phishing-detection",
	"--disable-dev-shm-usage",
	"--disable-features=Translate,MediaRouter,OptimizationHints",
	"--disable-background-timer-throttling",
	"--disable-backgrounding-occluded-windows",
	"--disable-renderer-backgrounding",
	"--disable-hang-monitor",
	"--metrics-recording-only",
	"--password-store=basic",
	"--use-mock-keychain",
	"--force-color-profile=srgb",
	"--hide-scrollbars",
	"--mute-audio",
	"--remote-debugging-pipe",
}

// browserProc is one running Chromium process (group) and its DevTools
// connection. A crashed or retired browserProc is never reused; the instance
// gets a new one.
type browserProc struct {
	pid     int
	dir     string // --user-data-dir, removed by stop
	version string

	ctx    context.Context // chromedp context holding the connection
	cancel context.CancelFunc
	lost   <-chan struct{} // closed when the DevTools connection drops

	exited  chan struct{} // closed when cmd.Wait returns
	exitErr error         // valid after exited

	stderr *tailBuffer

	tabs tabSet // pages ready for the next render

	inflight  atomic.Int64 // renders on this browser
	stopOnce  sync.Once
	stopping  atomic.Bool
	startedAt time.Time
}

// gone reports whether the process exited or the connection dropped.
func (b *browserProc) gone() bool {
	select {
	case <-b.exited:
		return true
	case <-b.lost:
		return true
	default:
		return false
	}
}

// dead returns a channel closed when the browser is gone.
func (b *browserProc) dead() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-b.exited:
		case <-b.lost:
		}
		close(ch)
	}()
	return ch
}

// pipeAllocator hands chromedp a connection to a browser that startBrowser
// started. It reports itself as an attacher, so chromedp never tries to
// start or stop a process; process lifetime is ours.
type pipeAllocator struct {
	conn *chromedp.PipeConn
	used atomic.Bool
}

// Allocate implements chromedp.Allocator.
func (a *pipeAllocator) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	if !a.used.CompareAndSwap(false, true) {
		return nil, errors.New("the pipe to this browser is already in use")
	}
	return chromedp.NewBrowserTransport(ctx, a.conn, opts...)
}

// Wait implements chromedp.Allocator.
func (a *pipeAllocator) Wait() {}

// Attaches implements chromedp.Attacher.
func (a *pipeAllocator) Attaches() bool { return true }

var _ chromedp.Attacher = (*pipeAllocator)(nil)

// startBrowser starts Chromium in its own process group with a fresh
// profile directory and connects to it over --remote-debugging-pipe (no TCP
// port, so no other local process can drive it).
func startBrowser(cfg *Config, log *slog.Logger) (_ *browserProc, err error) {
	dir, err := os.MkdirTemp("", "baton-chromium-")
	if err != nil {
		return nil, fmt.Errorf("create profile dir: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()

	args := append([]string{}, baseFlags...)
	args = append(args, "--user-data-dir="+dir)
	if cfg.ProxyURL != "" {
		args = append(args, "--proxy-server="+cfg.ProxyURL, "--proxy-bypass-list=<-loopback>")
	}
	args = append(args, cfg.ExtraFlags...)
	args = append(args, "about:blank")

	// Chromium reads commands from fd 3 and writes replies to fd 4.
	childR, parentW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	parentR, childW, err := os.Pipe()
	if err != nil {
		childR.Close()
		parentW.Close()
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		childR.Close()
		parentW.Close()
		parentR.Close()
		childW.Close()
		return nil, fmt.Errorf("create pipe: %w", err)
	}

	cmd := exec.Command(cfg.ChromiumPath, args...)
	cmd.ExtraFiles = []*os.File{childR, childW}
	cmd.Stdout = errW
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	b := &browserProc{dir: dir, exited: make(chan struct{}), stderr: newTailBuffer(8 << 10), startedAt: time.Now()}

	// Pdeathsig fires when the *thread* that started the child exits, so
	// start and wait from one goroutine locked to its thread
	// (go.dev/issue/27505).
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		b.exitErr = cmd.Wait()
		close(b.exited)
	}()
	err = <-started
	childR.Close()
	childW.Close()
	errW.Close()
	if err != nil {
		parentR.Close()
		parentW.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s (set Config.ChromiumPath): %w", cfg.ChromiumPath, err)
	}
	b.pid = cmd.Process.Pid
	go b.stderr.readFrom(errR)

	alloc := &pipeAllocator{conn: chromedp.NewPipeConn(parentR, parentW)}
	allocCtx, cancelAlloc := chromedp.NewAllocatorContext(context.Background(), alloc)
	dlog := log.With("pid", b.pid)
	bctx, cancelB := chromedp.NewContext(allocCtx, chromedp.WithBrowserOption(
		chromedp.WithBrowserLogf(func(f string, a ...any) { dlog.Debug(fmt.Sprintf(f, a...)) }),
		chromedp.WithBrowserErrorf(func(f string, a ...any) { dlog.Debug("devtools: " + fmt.Sprintf(f, a...)) }),
	))
	b.ctx = bctx
	b.cancel = func() { cancelB(); cancelAlloc() }

	// The first call binds the connection to bctx, so it must not carry a
	// timeout; a watchdog kills the process instead.
	watchdog := time.AfterFunc(cfg.StartTimeout, func() { killGroup(b.pid) })
	ver, err := chromedp.CallBrowser(bctx, browser.GetVersion, cdp.Empty{})
	stopped := watchdog.Stop()
	if err != nil || !stopped {
		b.stop()
		if err == nil {
			err = errors.New("timed out")
		}
		return nil, fmt.Errorf("connect to chromium pid %d: %w (stderr: %s)", b.pid, err, b.stderr.String())
	}
	b.version = ver.Product
	b.lost = chromedp.FromContext(bctx).Browser.LostConnection
	return b, nil
}

// stop kills the browser's process group (and any descendant that left
// it), waits for the main process and removes the profile directory. It is
// safe to call more than once and from several goroutines.
func (b *browserProc) stop() {
	b.stopOnce.Do(func() {
		b.stopping.Store(true)
		tree := processTree(b.pid)
		killGroup(b.pid)
		for _, pid := range tree {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if b.cancel != nil {
			b.cancel()
		}
		for _, tb := range b.tabs.closeAll() {
			go tb.close()
		}
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
		}
		// Children can outlive the main process by a moment and still
		// write into the profile.
		for i := 0; i < 50; i++ {
			if err := os.RemoveAll(b.dir); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// killGroup sends SIGKILL to the process group led by pid — only ever a
// group we created with Setpgid, never a name match.
func killGroup(pid int) {
	if pid > 1 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// procStat is the part of /proc/<pid>/stat we need.
type procStat struct{ pid, ppid, pgrp int }

func readProcStats() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procStat, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name is in parentheses and may contain spaces.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		out = append(out, procStat{pid, ppid, pgrp})
	}
	return out
}

// processTree returns root and every live descendant of root, plus every
// member of root's process group.
func processTree(root int) []int {
	stats := readProcStats()
	children := make(map[int][]int)
	in := map[int]bool{}
	for _, s := range stats {
		children[s.ppid] = append(children[s.ppid], s.pid)
		if s.pgrp == root || s.pid == root {
			in[s.pid] = true
		}
	}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !in[c] {
				in[c] = true
			}
			queue = append(queue, c)
		}
	}
	out := make([]int, 0, len(in))
	for p := range in {
		out = append(out, p)
	}
	return out
}

// treePSS sums the Pss of root's process tree from smaps_rollup, in bytes.
func treePSS(root int) int64 {
	var total int64
	for _, pid := range processTree(root) {
		total += pssOf(pid)
	}
	return total
}

func pssOf(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Pss:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// tailBuffer keeps the last n bytes written (Chromium's stderr, for error
// messages when a browser fails to start).
type tailBuffer struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{n: n} }

func (t *tailBuffer) readFrom(r io.ReadCloser) {
	defer r.Close()
	p := make([]byte, 4096)
	for {
		k, err := r.Read(p)
		if k > 0 {
			t.mu.Lock()
			t.buf = append(t.buf, p[:k]...)
			if len(t.buf) > t.n {
				t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.n:]...)
			}
			t.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
