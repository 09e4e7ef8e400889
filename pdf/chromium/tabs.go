package chromium

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
)

// Render modes (Config.Mode).
const (
	// ModeIsolated gives every render a new browser context and page,
	// disposed of afterwards. The next task's context and page are created
	// ahead of time, while the current render runs.
	ModeIsolated = "isolated"
	// ModeWarm reuses pages (each in a browser context of its own) across
	// renders, cleaning them between tasks; see the package doc for what
	// that does and does not isolate.
	ModeWarm = "warm"
)

// tab is one page in a browser context of its own, created on browser b.
// Its chromedp context lives as long as the tab (not as long as one
// render); a render calls it through renderCtx, which carries the tab's
// chromedp values but the render's cancellation.
type tab struct {
	b      *browserProc
	ctx    context.Context // the tab's chromedp context, derived from b.ctx
	cancel context.CancelFunc
	t      *chromedp.Target
	frame  cdp.FrameID // the main frame
	st     atomic.Pointer[pageState]
	uses   int
}

// newTab creates a browser context and a page in it on b. It gives up after
// d or when stop is done.
func newTab(b *browserProc, d time.Duration, stop context.Context) (*tab, error) {
	tb := &tab{b: b}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(func(ev any) {
		if s := tb.st.Load(); s != nil {
			s.onEvent(ev)
		}
	}))
	tb.ctx, tb.cancel = ctx, cancel
	// The first call binds the target to ctx, so it must not carry a
	// deadline of its own: a watchdog cancels the tab instead.
	var timedOut atomic.Bool
	watchdog := time.AfterFunc(d, func() { timedOut.Store(true); go cancel() })
	defer watchdog.Stop()
	stopWatch := context.AfterFunc(stop, func() { go cancel() })
	defer stopWatch()
	tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		go cancel()
		if timedOut.Load() {
			return nil, fmt.Errorf("create page: no answer within %s", d)
		}
		return nil, fmt.Errorf("create page: %w", err)
	}
	tb.t = chromedp.FromContext(ctx).Target
	tb.frame = tree.FrameTree.Frame.ID
	return tb, nil
}

// close closes the page and disposes of its browser context (chromedp's
// cancel does both and waits for them).
func (tb *tab) close() { tb.cancel() }

// renderCtx is a context with the tab's values (chromedp's target) and the
// render's deadline and cancellation.
type renderCtx struct {
	context.Context
	vals context.Context
}

func (c renderCtx) Value(k any) any {
	if v := c.vals.Value(k); v != nil {
		return v
	}
	return c.Context.Value(k)
}

// tabSet holds the pages of one browser that no render uses: the spares
// created ahead of time (isolated mode) or the cleaned warm pages (warm
// mode).
type tabSet struct {
	mu       sync.Mutex
	idle     []*tab
	making   int           // spares being created (isolated mode)
	pages    int           // warm pages alive: idle, rendering or being cleaned (warm mode)
	cleaning int           // warm pages being cleaned
	closed   bool          // the browser is being stopped
	ready    chan struct{} // closed and replaced when a page is put or given up
}

// wakeLocked wakes getTab callers waiting for a spare. s.mu held.
func (s *tabSet) wakeLocked() {
	if s.ready != nil {
		close(s.ready)
		s.ready = nil
	}
}

// takeOrWait returns an idle page, or (nil, ch) with a channel closed when
// a page being created (isolated) or cleaned (warm) may be ready, or
// (nil, nil) when the caller should create a page itself. In warm mode a
// browser keeps up to maxWarm pages, so that a render need not wait for the
// previous task's page to be cleaned; the caller of a (nil, nil) answer owns
// one of them and must create it or call drop.
func (s *tabSet) takeOrWait(warm bool, maxWarm int) (*tab, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.idle); n > 0 {
		tb := s.idle[n-1]
		s.idle = s.idle[:n-1]
		return tb, nil
	}
	if s.closed {
		return nil, nil
	}
	if warm {
		if s.pages < maxWarm || s.cleaning == 0 {
			s.pages++
			return nil, nil
		}
	} else if s.making == 0 {
		return nil, nil
	}
	if s.ready == nil {
		s.ready = make(chan struct{})
	}
	return nil, s.ready
}

// drop forgets a warm page that was closed or never created.
func (s *tabSet) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages--
	s.wakeLocked()
}

// startCleaning counts a warm page as being cleaned; false when the set is
// closed.
func (s *tabSet) startCleaning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.cleaning++
	return true
}

// doneCleaning keeps a cleaned page (ok) or forgets it; it reports whether
// the page was kept.
func (s *tabSet) doneCleaning(tb *tab, ok bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleaning--
	if ok && !s.closed {
		s.idle = append(s.idle, tb)
	} else {
		s.pages--
		ok = false
	}
	s.wakeLocked()
	return ok
}

// put keeps tb for the next render; false when the set is closed.
func (s *tabSet) put(tb *tab) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.idle = append(s.idle, tb)
	s.wakeLocked()
	return true
}

// closeAll closes the set and returns its pages for closing.
func (s *tabSet) closeAll() []*tab {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.wakeLocked()
	idle := s.idle
	s.idle = nil
	return idle
}

// getTab returns a page for a render on b: a spare or warm page when there
// is one, otherwise a new one.
func (p *Pool) getTab(b *browserProc, stop context.Context) (*tab, bool, error) {
	warm := p.cfg.Mode == ModeWarm
	for {
		tb, wait := b.tabs.takeOrWait(warm, 2*p.cfg.PagesPerInstance)
		if tb != nil {
			if tb.ctx.Err() == nil && !b.gone() {
				return tb, true, nil
			}
			p.discardTab(tb)
			continue
		}
		if wait == nil {
			break
		}
		// A page is on its way: creating another one now would only
		// compete with it for the CPU.
		select {
		case <-wait:
		case <-stop.Done():
			return nil, false, stop.Err()
		}
	}
	tb, err := newTab(b, p.cfg.RenderTimeout, stop)
	if err != nil && warm {
		b.tabs.drop()
	}
	return tb, false, err
}

// discardTab closes a page no render will use again (in the background: a
// page of a dead browser may take a while to answer).
func (p *Pool) discardTab(tb *tab) {
	tb.st.Store(nil)
	if p.cfg.Mode == ModeWarm {
		tb.b.tabs.drop()
	}
	go tb.close()
}

// refill creates spare pages on b in the background (isolated mode) until
// there is one per render slot of the instance.
func (p *Pool) refill(b *browserProc) {
	if p.cfg.Mode != ModeIsolated || p.cfg.Spares < 1 {
		return
	}
	s := &b.tabs
	s.mu.Lock()
	if s.closed || len(s.idle)+s.making >= p.cfg.Spares {
		s.mu.Unlock()
		return
	}
	s.making++
	s.mu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.mu.Lock()
		s.making--
		s.mu.Unlock()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		tb, err := newTab(b, p.cfg.RenderTimeout, p.ctx)
		s.mu.Lock()
		s.making--
		if err != nil {
			s.wakeLocked()
		}
		s.mu.Unlock()
		if err != nil {
			if !b.gone() && !p.isClosed() {
				p.log.Debug("creating a spare page failed", "pid", b.pid, "err", err)
			}
			return
		}
		tb.st.Store(nil)
		if !s.put(tb) {
			tb.close()
			return
		}
		p.refill(b)
	}()
}

// keepWarm reports whether tb, which just served a render, is to be cleaned
// and kept for the next task (warm mode, a render that ended cleanly, uses
// left). If so it is counted as being cleaned and the caller must call
// cleanAndKeep; otherwise the caller closes it with closeTab.
func (p *Pool) keepWarm(tb *tab, reuse bool) bool {
	tb.uses++
	return reuse && p.cfg.Mode == ModeWarm && tb.uses < p.cfg.WarmMaxUses &&
		!tb.b.gone() && tb.ctx.Err() == nil && tb.b.tabs.startCleaning()
}

// cleanAndKeep cleans a warm page after its task and keeps it for the
// next one, or closes it when the cleaning fails. It runs after the render
// slot was released: the next render takes another warm page meanwhile.
func (p *Pool) cleanAndKeep(tb *tab, st *pageState) {
	err := p.cleanTab(tb, st)
	tb.st.Store(nil)
	if tb.b.tabs.doneCleaning(tb, err == nil) {
		return
	}
	if err != nil && !tb.b.gone() && !tb.b.stopping.Load() && !p.isClosed() {
		p.log.Warn("cleaning a warm page failed; closing it", "pid", tb.b.pid, "err", err)
	}
	tb.close()
}

// closeTab closes a page after its render (isolated mode, or a warm page
// that is not kept). It runs before the render slot is released.
func (p *Pool) closeTab(tb *tab) {
	tb.st.Store(nil)
	tb.close()
	if p.cfg.Mode == ModeWarm {
		tb.b.tabs.drop()
	}
}

// cleanTab resets a warm page after a task: it stops the document (about:
// blank), clears the storage of every origin the task touched (local and
// session storage, IndexedDB, Cache Storage, service workers, ...), the
// browser context's cookies and HTTP cache, and the tab's history, and
// undoes the task's overrides.
func (p *Pool) cleanTab(tb *tab, st *pageState) error {
	ctx, cancel := context.WithTimeout(renderCtx{Context: tb.b.ctx, vals: tb.ctx}, min(p.cfg.RenderTimeout, 10*time.Second))
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)() // Close does not wait for a cleaning
	call := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	t := tb.t
	// Session storage belongs to the tab and survives navigations.
	_, _ = cdp.Call(ctx, t, cdpruntime.Evaluate, cdpruntime.EvaluateParams{Expression: "try{sessionStorage.clear()}catch(e){}"})
	if st.fetchOn {
		if err := call("disable fetch", cdpCall0(ctx, t, "Fetch.disable")); err != nil {
			return err
		}
	}
	if st.headersSet {
		if _, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{}}); err != nil {
			return call("reset headers", err)
		}
	}
	if st.mediaSet {
		if err := call("reset media", cdpCall0(ctx, t, "Emulation.setEmulatedMedia")); err != nil {
			return err
		}
	}
	res, err := cdp.Call(ctx, t, page.Navigate, page.NavigateParams{URL: "about:blank"})
	if err != nil {
		return call("navigate to about:blank", err)
	}
	if res.ErrorText != "" {
		return errors.New("navigate to about:blank: " + res.ErrorText)
	}
	for _, o := range st.originList() {
		if _, err := cdp.Call(ctx, t, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: o, StorageTypes: "all"}); err != nil {
			return call("clear storage of "+o, err)
		}
	}
	if _, err := cdp.Call(ctx, t, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		return call("clear cookies", err)
	}
	if _, err := cdp.Call(ctx, t, network.ClearBrowserCache, cdp.Empty{}); err != nil {
		return call("clear cache", err)
	}
	// Right after the navigation to about:blank the page can be between
	// two frame hosts ("Not attached to an active page"): retry briefly.
	var err2 error
	for i := 0; i < 10; i++ {
		if _, err2 = cdp.Call(ctx, t, page.ResetNavigationHistory, cdp.Empty{}); err2 == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return call("reset history", err2)
}

// cdpCall0 sends a command without parameters whose cdproto type needs
// some (Fetch.disable and Emulation.setEmulatedMedia with no media reset
// their state).
func cdpCall0(ctx context.Context, t *chromedp.Target, method string) error {
	return t.Call(ctx, method, nil, nil)
}

// originOf returns scheme://host[:port] of an http(s) URL, or "".
func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
