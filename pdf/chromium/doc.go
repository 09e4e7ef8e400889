// Package chromium renders URLs and inline HTML to PDF with a self-healing
// pool of headless Chromium browsers (SPEC §6; the HTML-to-PDF seed v2.1,
// §1 BrowserPool self-healing and §2 Stalled).
//
// # Design
//
// A Pool owns Config.Instances browsers: Chromium's headless shell by
// default (DefaultChromiumPath; the same build and printing code as the
// full browser without its windowing layer, several times faster per new
// page). Each browser is started by the pool with os/exec, never by name
// (the real binary, not Debian's /usr/bin wrapper script, so the pid is the
// browser's), in its own process group
// (Setpgid) with Pdeathsig=SIGKILL (set from a goroutine locked to its OS
// thread, because the signal follows the thread that forked), with its own
// fresh --user-data-dir. The DevTools connection is --remote-debugging-pipe
// (file descriptors 3 and 4), handed to chromedp through a small Allocator,
// so no TCP debugging port exists that another local process or a page could
// reach. A browser is stopped by SIGKILL to its own process group (and to any
// descendant that left the group), after which its profile is removed.
//
// Render waits for a free slot (Instances × PagesPerInstance; by default one
// slot per CPU, because rendering is CPU bound and more pages than cores only
// add latency), preferring instances that are not waiting to be recycled.
// Render returns as soon as the PDF is printed; the page is closed (or
// cleaned, in warm mode) and the slot released in the background, so the
// caller stores the PDF meanwhile.
//
// # Isolation and modes
//
// Config.Mode chooses between two modes.
//
// ModeIsolated (the default): every render gets a new browser context
// (Target.createBrowserContext: its own cookie jar, cache, storage,
// permissions, proxy-credential cache) and a new page in it; both are
// disposed of after the render, whatever the outcome. The context and page
// of the next render are created ahead of time (Config.Spares per browser,
// by default one per render slot) while the current render navigates and
// prints, so a render normally starts on a ready about:blank page. A spare
// has never loaded anything but about:blank, so isolation is the same as
// creating it on demand. A cookie or localStorage set by one task is not
// visible to the next (tested).
//
// ModeWarm (opt-in): pages are reused across renders. Each page still has a
// browser context of its own, never shared by two renders at once. After a
// successful render the render slot is released and the page is cleaned
// before another task gets it (meanwhile the next render takes another
// warm page; a browser keeps at most two warm pages per slot):
// sessionStorage.clear() in the last document, Fetch interception, extra
// headers and media emulation undone, navigation to about:blank,
// Storage.clearDataForOrigin(origin, "all") for every http(s) origin the
// task requested (local storage, IndexedDB, Cache Storage, service workers,
// WebSQL, file systems, shader cache), Network.clearBrowserCookies,
// Network.clearBrowserCache and Page.resetNavigationHistory. A page is closed
// instead of cleaned after a failed render, after a render with a custom
// userAgent, and after Config.WarmMaxUses renders. What warm mode does not
// isolate, precisely: (1) the browser context's proxy-credential cache — the
// next task's first requests carry the previous task's session as proxy
// credentials; the proxy refuses an ended session with 407 and the page
// answers with its own, but refusals are attributed to the previous task
// should its session still be open; (2) state not keyed by an origin the
// task requested: sessionStorage of cross-origin frames, the HSTS and
// network-state caches (DNS is resolved by the proxy), socket pools and
// the renderer process (a renderer-level compromise persists into the next
// task); (3) history.length is 2 instead of 1 (the about:blank entry of the
// cleanup; no URL of the previous task). Cookies, localStorage and
// sessionStorage set by one task are not visible to the next (tested). Use
// warm mode only when all tasks of a pool come from parties that trust one
// another.
//
// Inline HTML never touches the filesystem or a listening socket: the page
// navigates to BaseURL (or http://inline.baton.invalid/ without one) and
// the pool answers that one main-frame document request from memory with
// Fetch.fulfillRequest. The document therefore has BaseURL's origin and its
// relative URLs resolve against BaseURL without rewriting the HTML; every
// other request goes to the network (through the proxy when one is set).
//
// With Config.ProxyURL, Chromium runs with --proxy-server=URL and
// --proxy-bypass-list=<-loopback> (loopback is proxied too, so the egress
// guard sees it). Chromium cannot take credentials in --proxy-server, so the
// page enables Fetch interception with handleAuthRequests and answers the
// proxy's 407 challenge with user name Job.SessionID and password "x"
// (once per request; a second challenge is cancelled; without a SessionID the
// challenge is not answered and the page fails). Limitation: requests
// of out-of-process iframes and workers are separate DevTools targets and are
// not answered, so they fail closed (the proxy refuses them). The cost is
// one DevTools round trip per request while a proxy session is in use.
// Extra headers named Proxy-* are refused by Options.Validate so that a client
// cannot present another session's credentials.
//
// A refusal by the egress proxy is reported as ErrEgressRefused when the main
// document fails with ERR_TUNNEL_CONNECTION_FAILED (a refused CONNECT), with a
// proxy-authentication error, or answers 403 carrying a Proxy-Status header
// (RFC 9209) — the proxy should send that header with its 403 so that it can
// be told apart from a 403 of the site itself.
//
// # Phases, timeouts and error kinds
//
// A render runs three phases, each with its own deadline, inside an overall
// budget (Options.TimeoutMs, or NavigationTimeout+RenderTimeout):
//
//   - setup (RenderTimeout): take the ready page (or create the browser
//     context and page), apply user agent, media, headers, cookies,
//     interception;
//   - navigation (NavigationTimeout): Page.navigate, then the lifecycle events
//     of that navigation's loader ("load", plus "networkIdle" for
//     waitUntil=networkidle), waitForSelector, waitDelayMs;
//   - print (RenderTimeout): two requestAnimationFrame turns (so script-drawn
//     canvases are painted; tested), then Page.printToPDF as a stream.
//
// "timeout" (ErrTimeout) means the page never finished loading in time: the
// navigation phase, or the job's own budget, ran out. It is the page's fault;
// the service marks the task timeout and does not retry it.
//
// "stalled" (ErrStalled, matched by ErrBrowserCrashed and ErrHung) means the
// browser failed, not the page: the process exited or was killed, the
// DevTools pipe closed, the page's renderer crashed, or setup/print did not
// answer within RenderTimeout. The in-flight render fails at once — it
// watches cmd.Wait and chromedp's LostConnection, not its timeout (tested by
// SIGKILLing the process group mid-load) — and the service retries the task.
// After ErrHung the pool probes the instance at once.
//
// ErrInvalid covers bad jobs and options (including a page range beyond the
// document and an invalid selector); ErrNavigation covers net errors of the
// main document (DNS, refused connection, TLS), with Chromium's error name in
// the client message. Every error is an *Error whose Message is safe for
// clients and whose Err (the cause: pids, DevTools text) is for logs.
//
// # Self-healing
//
// An instance is recycled after MaxTasksPerBrowser renders, or when the
// summed PSS of its whole process tree (the browser, its zygotes, GPU,
// network, storage and renderer processes, from /proc/<pid>/smaps_rollup;
// the main process is only about a third of it) exceeds RestartMemoryMB,
// measured every MemoryInterval and on every health probe. Recycling starts
// the replacement first, routes new renders to it, lets the old browser
// finish its renders and then kills it, so an instance never stops serving;
// recycles happen one at a time across the pool. A crashed browser (exit or
// lost connection) is replaced at once. Every HealthInterval each browser
// must open about:blank in a new target and evaluate 1+1; a failure restarts
// it (tested by SIGSTOPping a browser). Stats reports pid, renders, tree PSS
// and restarts by reason for each instance; Hooks report restarts, memory
// samples and render durations to a metrics layer.
//
// # Measured costs
//
// Output.Phases times each render (setup, navigation, print, and whether
// the page was ready ahead of time). On the shared 2-core machine (load
// average 4–19 from other builds, so absolute figures vary several-fold
// between runs) the process-tree PSS sample, which used to run after every
// render, cost about 15% of the service's own CPU in `baton bench pdf`
// (reading smaps_rollup of a dozen processes); it now runs every
// MemoryInterval (5s). See docs/benchmarks.md for the end-to-end figures
// of both modes next to bare chromedp loops doing the same browser work.
// Start of one browser: about 1–2 s. An idle browser tree: about 110 MB PSS
// with the headless shell (240–370 MB with the full browser, of which its
// main process is about 130 MB); each spare or warm page adds a renderer
// process.
package chromium
