package chromium

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Pool is a self-healing pool of Chromium browsers that renders Jobs to PDF.
// It is safe for concurrent use. Create it with New and stop it with Close.
type Pool struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change of slots or instances
	insts    []*instance
	live     map[*browserProc]bool // every browser not yet stopped, current or retiring
	retiring int                   // browsers being drained after a recycle
	closed   bool

	ctx       context.Context // ends at Close
	cancelCtx context.CancelFunc
	wake      chan struct{} // nudges the supervisor
	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// instance is one slot of the pool that always has (or is getting) a browser.
type instance struct {
	id       int
	b        *browserProc // nil while starting after a crash
	inflight int          // renders on this instance (current and retiring browser)
	tasks    int          // renders finished on b
	total    int          // renders finished on this instance
	pss      int64        // last tree PSS sample of b
	pending  string       // restart reason requested, "" for none
	restarts map[string]int
	failures int // consecutive failed starts
}

// InstanceStats describes one instance at the time of Stats.
type InstanceStats struct {
	ID         int            `json:"id"`
	PID        int            `json:"pid"` // 0 while restarting
	Version    string         `json:"version"`
	Inflight   int            `json:"inflight"`
	Tasks      int            `json:"tasks"`      // renders by the current browser
	TotalTasks int            `json:"totalTasks"` // renders since the pool started
	PSSBytes   int64          `json:"pssBytes"`   // last sample of the tree PSS
	Restarts   map[string]int `json:"restarts"`   // by reason
	StartedAt  time.Time      `json:"startedAt"`  // of the current browser
}

// New starts cfg.Instances browsers and returns a pool serving them. ctx
// bounds only the start; the pool lives until Close.
func New(ctx context.Context, cfg Config) (*Pool, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Pool{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "pdf/chromium"),
		changed: make(chan struct{}),
		live:    make(map[*browserProc]bool),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	p.ctx, p.cancelCtx = context.WithCancel(context.Background())
	for i := 0; i < cfg.Instances; i++ {
		if err := ctx.Err(); err != nil {
			p.Close()
			return nil, fmt.Errorf("start chromium pool: %w", err)
		}
		inst := &instance{id: i, restarts: make(map[string]int)}
		b, err := p.startProc(inst)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("start chromium pool: %w", err)
		}
		inst.b = b
		p.insts = append(p.insts, inst)
		p.log.Info("browser started", "instance", i, "pid", b.pid, "version", b.version)
		p.refill(b)
		go p.sampleMemory(inst, b) // a first sample now, then every MemoryInterval
	}
	p.wg.Add(1)
	go p.supervise()
	return p, nil
}

// startProc starts a browser for inst and watches it for crashes.
func (p *Pool) startProc(inst *instance) (*browserProc, error) {
	b, err := startBrowser(&p.cfg, p.log.With("instance", inst.id))
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		b.stop()
		return nil, ErrClosed
	}
	p.live[b] = true
	p.mu.Unlock()
	go func() {
		<-b.dead()
		if b.stopping.Load() {
			return
		}
		p.log.Warn("browser died", "instance", inst.id, "pid", b.pid, "exit", exitText(b), "stderr_tail", lastLine(b.stderr.String()))
		p.requestRestart(inst, b, ReasonCrash)
	}()
	return b, nil
}

func exitText(b *browserProc) string {
	select {
	case <-b.exited:
		if b.exitErr != nil {
			return b.exitErr.Error()
		}
		return "exit status 0"
	default:
		return "running (connection lost)"
	}
}

func lastLine(s string) string {
	if i := len(s) - 300; i > 0 {
		return s[i:]
	}
	return s
}

// broadcastLocked wakes every goroutine waiting for a change. p.mu held.
func (p *Pool) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Pool) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// requestRestart asks the supervisor to replace inst's browser b. A crash
// overrides any other pending reason; a request for a browser that is no
// longer current is ignored.
func (p *Pool) requestRestart(inst *instance, b *browserProc, reason string) {
	p.mu.Lock()
	if inst.b == b && b != nil && (inst.pending == "" || reason == ReasonCrash) {
		inst.pending = reason
	}
	p.broadcastLocked()
	p.mu.Unlock()
	p.nudge()
}

// acquire waits for a render slot on a healthy browser.
func (p *Pool) acquire(ctx context.Context) (*instance, *browserProc, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, nil, newError(KindClosed, ErrClosed, "the renderer is shutting down")
		}
		var best *instance
		for _, inst := range p.insts {
			if inst.b == nil || inst.b.gone() || inst.inflight >= p.cfg.PagesPerInstance {
				continue
			}
			// Prefer instances that are not waiting for a recycle, then
			// the least loaded.
			if best == nil || (best.pending != "" && inst.pending == "") ||
				((best.pending == "") == (inst.pending == "") && inst.inflight < best.inflight) {
				best = inst
			}
		}
		if best != nil {
			best.inflight++
			b := best.b
			b.inflight.Add(1)
			p.mu.Unlock()
			return best, b, nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil, newError(KindCanceled, ctx.Err(), "canceled while waiting for a browser")
		case <-ch:
		}
	}
}

// release returns the slot and decides whether the browser must be recycled.
func (p *Pool) release(inst *instance, b *browserProc) {
	p.mu.Lock()
	inst.inflight--
	b.inflight.Add(-1)
	current := inst.b == b
	if current {
		inst.tasks++
		inst.total++
		if inst.tasks >= p.cfg.MaxTasksPerBrowser && inst.pending == "" {
			inst.pending = ReasonMaxTasks
			p.nudge()
		}
	}
	p.broadcastLocked()
	p.mu.Unlock()
}

// sampleMemory measures b's process tree and requests a recycle above the
// limit. It runs every MemoryInterval (reading /proc for every process of
// the tree costs several milliseconds of CPU, too much after every render).
func (p *Pool) sampleMemory(inst *instance, b *browserProc) {
	pss := treePSS(b.pid)
	if h := p.cfg.Hooks.OnMemorySample; h != nil {
		h(inst.id, pss)
	}
	p.mu.Lock()
	if inst.b == b {
		inst.pss = pss
	}
	p.mu.Unlock()
	if pss > int64(p.cfg.RestartMemoryMB)<<20 {
		p.requestRestart(inst, b, ReasonMemory)
	}
}

// supervise restarts instances on request and runs the health probe.
func (p *Pool) supervise() {
	defer p.wg.Done()
	var tick <-chan time.Time
	if p.cfg.HealthInterval > 0 {
		t := time.NewTicker(p.cfg.HealthInterval)
		defer t.Stop()
		tick = t.C
	}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	mem := time.NewTicker(p.cfg.MemoryInterval)
	defer mem.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
		case <-retry.C:
		case <-tick:
			p.checkAll()
		case <-mem.C:
			p.sampleAll()
		}
		for {
			inst, reason := p.nextRestart()
			if inst == nil {
				break
			}
			if err := p.restart(inst, reason); err != nil {
				if errors.Is(err, ErrClosed) {
					return
				}
				p.mu.Lock()
				inst.failures++
				n := inst.failures
				p.mu.Unlock()
				d := min(time.Duration(1<<min(n, 5))*time.Second, 30*time.Second)
				p.log.Error("browser restart failed", "instance", inst.id, "reason", reason, "retry_in", d, "err", err)
				retry.Reset(d)
				break
			}
		}
	}
}

// nextRestart picks the next instance to restart: a crashed (or dead) one
// first; a recycle (max_tasks, memory, unhealthy) only when no other browser
// is being retired, so instances recycle one at a time.
func (p *Pool) nextRestart() (*instance, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ""
	}
	for _, inst := range p.insts {
		if inst.b == nil || inst.pending == ReasonCrash || inst.b.gone() {
			return inst, ReasonCrash
		}
	}
	if p.retiring > 0 {
		return nil, ""
	}
	for _, inst := range p.insts {
		if inst.pending != "" {
			return inst, inst.pending
		}
	}
	return nil, ""
}

// restart starts a new browser for inst, swaps it in, and retires the old
// one: at once if it died, otherwise after its in-flight renders finish.
// New renders go to the new browser immediately, so a recycle never takes
// the instance out of service.
func (p *Pool) restart(inst *instance, reason string) error {
	p.mu.Lock()
	old := inst.b
	crashed := reason == ReasonCrash
	if crashed && old != nil {
		// Take it out of service before the (slow) start of its successor.
		inst.b = nil
		p.broadcastLocked()
	}
	p.mu.Unlock()
	if crashed && old != nil {
		p.stopProc(old)
	}

	nb, err := p.startProc(inst)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.stopProc(nb)
		return ErrClosed
	}
	inst.b = nb
	inst.tasks = 0
	inst.pss = 0
	inst.pending = ""
	inst.failures = 0
	inst.restarts[reason]++
	if !crashed && old != nil {
		p.retiring++
	}
	p.broadcastLocked()
	p.mu.Unlock()
	p.refill(nb)
	go p.sampleMemory(inst, nb)

	p.log.Info("browser restarted", "instance", inst.id, "reason", reason, "pid", nb.pid, "old_pid", pidOf(old))
	if h := p.cfg.Hooks.OnRestart; h != nil {
		h(inst.id, reason)
	}
	if !crashed && old != nil {
		p.wg.Add(1)
		go p.retire(old)
	}
	return nil
}

func pidOf(b *browserProc) int {
	if b == nil {
		return 0
	}
	return b.pid
}

// retire waits for b's renders to finish (bounded by the longest a render
// may take), then stops it.
func (p *Pool) retire(b *browserProc) {
	defer p.wg.Done()
	deadline := time.NewTimer(p.cfg.NavigationTimeout + p.cfg.RenderTimeout + 5*time.Second)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		n := b.inflight.Load()
		ch := p.changed
		p.mu.Unlock()
		if n == 0 || b.gone() {
			break
		}
		select {
		case <-ch:
		case <-deadline.C:
			p.log.Warn("retiring browser still busy; killing it", "pid", b.pid, "inflight", n)
			n = 0
		case <-p.done:
			n = 0
		}
		if n == 0 {
			break
		}
	}
	p.stopProc(b)
	p.mu.Lock()
	p.retiring--
	p.mu.Unlock()
	p.nudge()
}

// stopProc stops b and forgets it.
func (p *Pool) stopProc(b *browserProc) {
	b.stop()
	p.mu.Lock()
	delete(p.live, b)
	p.mu.Unlock()
}

// serving returns the instances whose current browser is running and not
// waiting for a restart, with that browser.
func (p *Pool) serving() ([]*instance, []*browserProc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	insts := make([]*instance, 0, len(p.insts))
	procs := make([]*browserProc, 0, len(p.insts))
	for _, inst := range p.insts {
		if inst.b != nil && inst.pending == "" && !inst.b.gone() {
			insts = append(insts, inst)
			procs = append(procs, inst.b)
		}
	}
	return insts, procs
}

// checkAll probes every serving instance and samples its memory.
func (p *Pool) checkAll() {
	insts, procs := p.serving()
	for i, inst := range insts {
		p.check(inst, procs[i])
	}
}

// sampleAll measures the memory of every serving browser.
func (p *Pool) sampleAll() {
	insts, procs := p.serving()
	for i, inst := range insts {
		p.sampleMemory(inst, procs[i])
	}
}

// check runs the health probe on b and requests a restart if it fails.
func (p *Pool) check(inst *instance, b *browserProc) {
	if b.gone() {
		return // the crash watcher handles it
	}
	if err := p.probe(b); err != nil {
		if b.gone() || b.stopping.Load() {
			return
		}
		p.log.Warn("health probe failed", "instance", inst.id, "pid", b.pid, "err", err)
		p.requestRestart(inst, b, ReasonUnhealthy)
		return
	}
	p.sampleMemory(inst, b)
}

// probe opens about:blank in a new target and evaluates 1+1.
func (p *Pool) probe(b *browserProc) error {
	ctx, cancel := context.WithTimeout(b.ctx, min(p.cfg.RenderTimeout, 15*time.Second))
	defer cancel()
	tctx, tcancel := chromedp.NewContext(ctx)
	defer tcancel()
	res, err := chromedp.Call(tctx, cdpruntime.Evaluate, cdpruntime.EvaluateParams{Expression: "1+1", ReturnByValue: ptr(true)})
	if err != nil {
		return fmt.Errorf("health probe: %w", err)
	}
	if res.ExceptionDetails != nil || res.Result == nil || string(res.Result.Value) != "2" {
		return fmt.Errorf("health probe: 1+1 did not evaluate to 2")
	}
	return nil
}

// Stats returns a snapshot of every instance.
func (p *Pool) Stats() []InstanceStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]InstanceStats, 0, len(p.insts))
	for _, inst := range p.insts {
		s := InstanceStats{
			ID: inst.id, Inflight: inst.inflight, Tasks: inst.tasks, TotalTasks: inst.total,
			PSSBytes: inst.pss, Restarts: maps.Clone(inst.restarts),
		}
		if inst.b != nil {
			s.PID, s.Version, s.StartedAt = inst.b.pid, inst.b.version, inst.b.startedAt
		}
		out = append(out, s)
	}
	return out
}

// Close stops every browser (killing its process group) and removes the
// profile directories. Renders still running fail with ErrClosed. Close is
// safe to call more than once.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.done)
		p.cancelCtx()
		p.broadcastLocked()
		p.mu.Unlock()
		p.wg.Wait()
		p.mu.Lock()
		procs := make([]*browserProc, 0, len(p.live))
		for b := range p.live {
			procs = append(procs, b)
		}
		p.mu.Unlock()
		var wg sync.WaitGroup
		for _, b := range procs {
			wg.Go(func() { p.stopProc(b) })
		}
		wg.Wait()
		p.log.Info("pool closed", "browsers_stopped", len(procs))
	})
	return nil
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func ptr[T any](v T) *T { return &v }
