package chromium

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"time"
)

// Restart reasons passed to Hooks.OnRestart and counted in InstanceStats.
// They are a bounded set, safe as metric labels.
const (
	ReasonMaxTasks  = "max_tasks" // served Config.MaxTasksPerBrowser tasks
	ReasonMemory    = "memory"    // process-tree PSS above Config.RestartMemoryMB
	ReasonUnhealthy = "unhealthy" // the health probe failed
	ReasonCrash     = "crash"     // the process exited or the connection dropped
)

// Hooks are optional callbacks for metrics; any may be nil. They run on the
// pool's goroutines and must return quickly.
type Hooks struct {
	// OnRestart is called when instance is restarted, with one of the
	// Reason* constants.
	OnRestart func(instance int, reason string)
	// OnMemorySample is called with the proportional set size (bytes) of
	// the instance's whole process tree each time it is measured.
	OnMemorySample func(instance int, pssBytes int64)
	// OnRender is called after each Render with its duration and the kind
	// of its error ("" on success).
	OnRender func(d time.Duration, kind Kind)
}

// Config configures a Pool. Zero values take the documented defaults.
type Config struct {
	// Instances is the number of Chromium processes. Default 1.
	Instances int
	// PagesPerInstance is the number of renders one instance runs at once.
	// Default: the CPU count divided by Instances, rounded up (one render
	// slot per CPU overall; rendering is CPU bound).
	PagesPerInstance int
	// MaxTasksPerBrowser recycles an instance after this many renders.
	// Default 100.
	MaxTasksPerBrowser int
	// RestartMemoryMB recycles an instance when the summed PSS of its
	// process tree (browser plus every descendant) exceeds it. Default 600.
	RestartMemoryMB int
	// HealthInterval is the period of the health probe (a new about:blank
	// target evaluating 1+1) and memory sampling. Default 30s; negative
	// disables the periodic probe (memory is still sampled after renders).
	HealthInterval time.Duration
	// NavigationTimeout bounds navigation, waitUntil, waitForSelector and
	// waitDelayMs. Default 30s.
	NavigationTimeout time.Duration
	// RenderTimeout bounds printing (and each setup step). Default 30s.
	RenderTimeout time.Duration
	// StartTimeout bounds the start of one browser. Default 30s.
	StartTimeout time.Duration
	// Mode is ModeIsolated (default: a new browser context and page per
	// render, the next one created ahead of time) or ModeWarm (pages
	// reused across renders and cleaned between them; see the package doc).
	Mode string
	// WarmMaxUses closes a warm page after this many renders (ModeWarm).
	// Default 50.
	WarmMaxUses int
	// Spares is the number of pages (each in a new browser context) kept
	// ready per browser in ModeIsolated, created in the background while
	// renders run. Default PagesPerInstance; negative disables.
	Spares int
	// MemoryInterval is the period of the process-tree PSS sample that
	// recycles a browser above RestartMemoryMB. Default 5s.
	MemoryInterval time.Duration
	// ChromiumPath is the browser binary. Default DefaultChromiumPath():
	// Chromium's headless shell when it is installed.
	ChromiumPath string
	// ProxyURL, when set, is passed as --proxy-server with
	// --proxy-bypass-list=<-loopback> so that every request, loopback
	// included, goes through it (e.g. "http://127.0.0.1:3128"). A Job's
	// SessionID is answered to the proxy's 407 challenge as the user name.
	ProxyURL string
	// ExtraFlags are added to Chromium's command line ("--flag=value").
	ExtraFlags []string
	// Logger receives the pool's logs; a "component" attribute is added.
	// Default slog.Default().
	Logger *slog.Logger
	// Hooks are metric callbacks.
	Hooks Hooks
}

func (c *Config) setDefaults() {
	if c.Instances == 0 {
		c.Instances = 1
	}
	if c.PagesPerInstance == 0 {
		c.PagesPerInstance = max(1, (runtime.NumCPU()+c.Instances-1)/c.Instances)
	}
	if c.Mode == "" {
		c.Mode = ModeIsolated
	}
	if c.WarmMaxUses == 0 {
		c.WarmMaxUses = 50
	}
	if c.Spares == 0 {
		c.Spares = c.PagesPerInstance
	}
	if c.MemoryInterval <= 0 {
		c.MemoryInterval = 5 * time.Second
	}
	if c.MaxTasksPerBrowser == 0 {
		c.MaxTasksPerBrowser = 100
	}
	if c.RestartMemoryMB == 0 {
		c.RestartMemoryMB = 600
	}
	if c.HealthInterval == 0 {
		c.HealthInterval = 30 * time.Second
	}
	if c.NavigationTimeout == 0 {
		c.NavigationTimeout = 30 * time.Second
	}
	if c.RenderTimeout == 0 {
		c.RenderTimeout = 30 * time.Second
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.ChromiumPath == "" {
		c.ChromiumPath = DefaultChromiumPath()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// ChromiumCandidates are the binaries DefaultChromiumPath looks for, in
// order. The headless shell (Debian's chromium-headless-shell, the same
// Chromium build without the desktop browser's windowing layer) renders the
// same PDFs at several times the full browser's rate on a small machine
// (docs/benchmarks.md); the full browser is the fallback. The real binaries
// come before Debian's /usr/bin wrapper scripts, which do not exec and would
// put a shell between the pool and the browser.
var ChromiumCandidates = []string{
	"/usr/lib/chromium/chromium-headless-shell",
	"/usr/bin/chromium-headless-shell",
	"/usr/lib/chromium/chromium",
	"/usr/bin/chromium",
}

// DefaultChromiumPath returns the first of ChromiumCandidates that exists,
// or the first candidate (whose start then fails with a clear error).
func DefaultChromiumPath() string {
	for _, p := range ChromiumCandidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ChromiumCandidates[0]
}

// validate checks a Config after setDefaults.
func (c *Config) validate() error {
	switch {
	case c.Instances < 1 || c.Instances > 64:
		return fmt.Errorf("chromium config: Instances must be between 1 and 64, got %d", c.Instances)
	case c.PagesPerInstance < 1 || c.PagesPerInstance > 64:
		return fmt.Errorf("chromium config: PagesPerInstance must be between 1 and 64, got %d", c.PagesPerInstance)
	case c.Mode != ModeIsolated && c.Mode != ModeWarm:
		return fmt.Errorf("chromium config: Mode must be %q or %q, got %q", ModeIsolated, ModeWarm, c.Mode)
	case c.WarmMaxUses < 1:
		return fmt.Errorf("chromium config: WarmMaxUses must be positive, got %d", c.WarmMaxUses)
	case c.MaxTasksPerBrowser < 1:
		return fmt.Errorf("chromium config: MaxTasksPerBrowser must be positive, got %d", c.MaxTasksPerBrowser)
	case c.RestartMemoryMB < 1:
		return fmt.Errorf("chromium config: RestartMemoryMB must be positive, got %d", c.RestartMemoryMB)
	case c.NavigationTimeout < 0 || c.RenderTimeout < 0 || c.StartTimeout < 0:
		return fmt.Errorf("chromium config: durations must not be negative")
	}
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("chromium config: ProxyURL must look like http://host:port without credentials, got %q", c.ProxyURL)
		}
	}
	return nil
}
