package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/app"
)

// registerPDFFlags adds the HTML→PDF service's flags of baton serve.
func registerPDFFlags(fs *pflag.FlagSet, c *app.PDFConfig) {
	registerPDFBrowserFlags(fs, c)
	fs.DurationVar(&c.IdempotencyTTL, "pdf-idempotency-ttl", 24*time.Hour, "how long Idempotency-Keys are kept")
	fs.Int64Var(&c.MaxHTMLBytes, "pdf-max-html-bytes", 10<<20, "largest inline HTML accepted")
	fs.IntVar(&c.MaxAttempts, "pdf-max-attempts", 3, "attempts of a conversion (browser crashes, lost workers)")
	fs.StringVar(&c.PublicURL, "public-url", "", "external base URL of this controller, used in resultUrl (default the listen address)")
	fs.IntVar(&c.CallbackAttempts, "pdf-callback-attempts", 5, "attempts per callback")
	fs.DurationVar(&c.CallbackBackoff, "pdf-callback-backoff", time.Second, "first wait between callback attempts (doubles each time)")
}

// registerPDFBrowserFlags adds the flags of the renderer (browsers, modes,
// timeouts), shared by baton serve and baton worker.
func registerPDFBrowserFlags(fs *pflag.FlagSet, c *app.PDFConfig) {
	fs.IntVar(&c.Browsers, "pdf-browsers", 1, "Chromium processes rendering PDFs (started on the first render)")
	fs.IntVar(&c.PagesPerBrowser, "pdf-pages-per-browser", 0, "renders one browser runs at once (0 = CPUs / browsers)")
	fs.IntVar(&c.MaxTasksPerBrowser, "pdf-max-tasks-per-browser", 100, "recycle a browser after this many renders")
	fs.IntVar(&c.RestartMemoryMB, "pdf-restart-memory-mb", 600, "recycle a browser whose process tree (PSS) exceeds this many MiB")
	fs.DurationVar(&c.HealthInterval, "pdf-health-interval", 30*time.Second, "browser health probe interval")
	fs.DurationVar(&c.NavigationTimeout, "pdf-navigation-timeout", 30*time.Second, "how long a page may take to load")
	fs.DurationVar(&c.SlowThreshold, "pdf-slow-threshold", 20*time.Second, "render budget on pdf.fast/pdf.normal; a render past it moves to pdf.slow")
	fs.StringVar(&c.ChromiumPath, "chromium", "", "Chromium binary (default: the headless shell /usr/lib/chromium/chromium-headless-shell if installed, else the full browser)")
	fs.StringVar(&c.Mode, "pdf-mode", "isolated", "isolated (new browser context and page per task) or warm (pages reused, cleaned between tasks; see docs/pdf.md)")
	fs.IntVar(&c.WarmMaxUses, "pdf-warm-max-uses", 50, "in warm mode, close a page after this many tasks")
}
