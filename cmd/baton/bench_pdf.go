package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/spf13/cobra"

	"github.com/batonhq/baton/app"
	"github.com/batonhq/baton/internal/redisns"
	"github.com/batonhq/baton/pdf"
	"github.com/batonhq/baton/pdf/chromium"
)

// pdfBenchRun is one (mode, concurrency) measurement.
type pdfBenchRun struct {
	// Mode is baton-isolated / baton-warm (HTTP API → worker → download,
	// --pdf-mode isolated / warm) or bare-isolated / bare-reuse (the bare
	// chromedp loops doing the same browser work).
	Mode        string  `json:"mode"`
	Concurrency int     `json:"concurrency"`
	Pages       int     `json:"pages"`
	PagesPerSec float64 `json:"pagesPerSec"`
	P50Ms       float64 `json:"p50Ms"`
	P99Ms       float64 `json:"p99Ms"`
}

// pdfBenchResult is the JSON line baton bench pdf --json prints last.
type pdfBenchResult struct {
	Bench       string        `json:"bench"`
	Store       string        `json:"store"`
	Pages       int           `json:"pages"`
	Docs        []string      `json:"docs"`
	PagesPerSec float64       `json:"pagesPerSec"` // baton (first mode) at the highest concurrency
	P50Ms       float64       `json:"p50Ms"`
	P99Ms       float64       `json:"p99Ms"`
	Runs        []pdfBenchRun `json:"runs"`
	GOMAXPROCS  int           `json:"gomaxprocs"`
}

// pdfBenchDocs, when set (--docs), keeps only these documents of the set.
var pdfBenchDocs []string

// benchDocs is the fixed page set: plain text, Chinese text, images and a
// chart drawn by a script in an animation frame (filtered by --docs).
func benchDocs() []struct{ name, html string } {
	all := allBenchDocs()
	if len(pdfBenchDocs) == 0 {
		return all
	}
	var out []struct{ name, html string }
	for _, d := range all {
		if slices.Contains(pdfBenchDocs, d.name) {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

func allBenchDocs() []struct{ name, html string } {
	img := image.NewRGBA(image.Rect(0, 0, 240, 160))
	for y := range 160 {
		for x := range 240 {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	src := "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
	imgs := strings.Repeat(`<img src="`+src+`" style="margin:4px">`, 6)
	para := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	zh := strings.Repeat("敏捷的棕色狐狸跳过了懒狗。中文排版与字体渲染测试。", 30)
	return []struct{ name, html string }{
		{"text", `<html><body><h1>Invoice 1042</h1><p>` + para + `</p></body></html>`},
		{"chinese", `<html><head><meta charset="utf-8"></head><body><h1>发票 1042</h1><p>` + zh + `</p></body></html>`},
		{"images", `<html><body><h1>Gallery</h1>` + imgs + `</body></html>`},
		{"chart", `<html><body><h1>Chart</h1><canvas id="c" width="600" height="300"></canvas><script>
requestAnimationFrame(()=>{const x=document.getElementById('c').getContext('2d');
for(let i=0;i<24;i++){x.fillStyle='hsl('+(i*15)+',70%,50%)';x.fillRect(10+i*24,290-i*11,18,i*11)}})</script></body></html>`},
	}
}

func newBenchPDF() *cobra.Command {
	var (
		redisURL, db string
		pages        int
		concs, mode  string
		asJSON       bool
		noBare       bool
		chromiumBin  string
		bareFrames   bool
	)
	cmd := &cobra.Command{
		Use:   "pdf",
		Short: "Conversions end to end (HTTP API → in-process worker → Chromium → download) next to a bare chromedp loop",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cs []int
			for _, f := range strings.Split(concs, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 || n > 16 {
					return fmt.Errorf("--concurrency: want numbers 1-16 separated by commas")
				}
				cs = append(cs, n)
			}
			res := pdfBenchResult{Bench: "pdf", Store: "sqlite", Pages: pages, GOMAXPROCS: runtime.GOMAXPROCS(0)}
			if redisURL != "" {
				res.Store = "redis"
			}
			for _, d := range benchDocs() {
				res.Docs = append(res.Docs, d.name)
			}
			var modes []string
			switch mode {
			case "isolated", "warm":
				modes = []string{mode}
			case "both":
				modes = []string{"isolated", "warm"}
			default:
				return fmt.Errorf("--mode: want isolated, warm or both")
			}
			out := cmd.OutOrStdout()
			set := false
			for _, c := range cs {
				for _, m := range modes {
					r, err := benchBaton(cmd.Context(), redisURL, db, chromiumBin, pages, c, m)
					if err != nil {
						return err
					}
					res.Runs = append(res.Runs, r)
					fmt.Fprintf(out, "%-14s c=%d pages=%d → %.2f pages/s p50=%.0fms p99=%.0fms\n", r.Mode, c, r.Pages, r.PagesPerSec, r.P50Ms, r.P99Ms)
					if m == modes[0] || !set {
						res.PagesPerSec, res.P50Ms, res.P99Ms, set = r.PagesPerSec, r.P50Ms, r.P99Ms, true
					}
					if noBare {
						continue
					}
					b, err := benchBare(cmd.Context(), chromiumBin, bareFrames, pages, c, m)
					if err != nil {
						return err
					}
					res.Runs = append(res.Runs, b)
					fmt.Fprintf(out, "%-14s c=%d pages=%d → %.2f pages/s p50=%.0fms p99=%.0fms\n", b.Mode, c, b.Pages, b.PagesPerSec, b.P50Ms, b.P99Ms)
				}
			}
			if asJSON {
				b, _ := json.Marshal(res)
				fmt.Fprintln(out, string(b))
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&redisURL, "redis", "", "Redis URL (empty = embedded SQLite store)")
	fs.StringVar(&db, "db", "", "main DB DSN (default a SQLite file in a temporary directory)")
	fs.IntVar(&pages, "pages", 24, "conversions per run (cycling through the page set)")
	fs.StringSliceVar(&pdfBenchDocs, "docs", nil, "only these documents of the set: text, chinese, images, chart (default all)")
	fs.StringVar(&concs, "concurrency", "1,2", "pages open at once (browser render slots; the service runs twice as many in-process workers, so a slot never waits on the queue round trip), one run each")
	fs.BoolVar(&asJSON, "json", false, "print the figures as one JSON object on the last line")
	fs.StringVar(&mode, "mode", "isolated", "render mode of the service: isolated, warm or both (each next to its bare loop)")
	fs.BoolVar(&noBare, "no-bare", false, "skip the bare chromedp loops")
	fs.BoolVar(&bareFrames, "bare-frames", true, "the bare loop waits for two animation frames before printing, as the service does (false: navigate and print only)")
	fs.StringVar(&chromiumBin, "chromium", chromium.DefaultChromiumPath(), "browser binary of the service and of the bare loop")
	usageEnv(fs)
	return cmd
}

func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s)-1) + 0.5)
	return float64(s[i].Microseconds()) / 1000
}

// runPages runs n ops on c goroutines and measures each.
func runPages(n, c int, op func(i int) error) ([]time.Duration, time.Duration, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				err := op(i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, time.Since(t0))
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return lat, time.Since(start), firstErr
}

func benchBaton(ctx context.Context, redisURL, db, bin string, pages, c int, mode string) (pdfBenchRun, error) {
	dir, err := os.MkdirTemp("", "baton-bench-pdf-")
	if err != nil {
		return pdfBenchRun{}, err
	}
	defer os.RemoveAll(dir)
	// Twice as many workers as render slots: a worker that stores its PDF
	// and reports its result does not leave a slot idle meanwhile.
	cfg := app.Config{Addr: "127.0.0.1:0", DataDir: dir, Workers: 2 * c, DB: db, Redis: redisURL,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		PDF:    app.PDFConfig{Browsers: 1, PagesPerBrowser: c, HealthInterval: -1, Mode: mode, ChromiumPath: bin}}
	if redisURL != "" {
		cfg.RedisNamespace = "bench-pdf-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		defer func() { _, _ = redisns.Drop(context.Background(), redisURL, cfg.RedisNamespace) }()
	}
	a, err := app.New(ctx, cfg)
	if err != nil {
		return pdfBenchRun{}, err
	}
	defer a.Shutdown(context.Background())
	if err := a.Start(ctx); err != nil {
		return pdfBenchRun{}, err
	}
	docs := benchDocs()
	tok := a.Tokens.Admin
	client := &http.Client{}
	convert := func(i int) error {
		d := docs[i%len(docs)]
		body, _ := json.Marshal(pdf.CreateRequest{Source: pdf.Source{Type: "html", Content: d.html}, Priority: "fast"})
		req, _ := http.NewRequestWithContext(ctx, "POST", a.URL()+"/api/tasks/pdf", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		var cr pdf.Created
		err = json.NewDecoder(resp.Body).Decode(&cr)
		resp.Body.Close()
		if err != nil || cr.TaskID == "" {
			return fmt.Errorf("create: %d %v", resp.StatusCode, err)
		}
		for {
			// Long-poll: the service answers as soon as the task ended.
			req, _ := http.NewRequestWithContext(ctx, "GET", a.URL()+"/api/tasks/"+cr.TaskID+"/result?wait=60s", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && bytes.HasPrefix(b, []byte("%PDF-")) {
				return nil
			}
			if resp.StatusCode != http.StatusConflict {
				return fmt.Errorf("result of %s: %d %s", cr.TaskID, resp.StatusCode, b)
			}
			if strings.Contains(string(b), "failed") || strings.Contains(string(b), "timeout") {
				return fmt.Errorf("task %s: %s", cr.TaskID, b)
			}
		}
	}
	if err := convert(0); err != nil { // warm-up: starts the browser
		return pdfBenchRun{}, fmt.Errorf("warm-up: %w", err)
	}
	lat, elapsed, err := runPages(pages, c, convert)
	if err != nil {
		return pdfBenchRun{}, err
	}
	return pdfBenchRun{Mode: "baton-" + mode, Concurrency: c, Pages: pages, PagesPerSec: float64(pages) / elapsed.Seconds(),
		P50Ms: percentile(lat, .5), P99Ms: percentile(lat, .99)}, nil
}

// waitFramesJS resolves after two animation frames, as the service waits
// before printing.
const waitFramesJS = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"

// benchBare is the bare chromedp loop with the same browser work as the
// service's mode: "isolated" opens a new browser context and a new page in
// it per document (Target.createBrowserContext + createTarget + attach and
// chromedp's domain enables), navigates to the document as a data: URL,
// waits for two animation frames (frames; the service does, so that
// script-drawn charts are printed), prints (PrintToPDF, A4) and closes the
// page and disposes of the context; "warm" keeps c pages (one browser
// context each) and navigates them to document after document, without
// cleaning them. No proxy, no interception, no queue, no HTTP.
func benchBare(ctx context.Context, bin string, frames bool, pages, c int, mode string) (pdfBenchRun, error) {
	opts := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(bin), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true)}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts, chromedp.DisableGPU, chromedp.NoSandbox)
	actx, cancelA := chromedp.NewExecAllocator(context.WithoutCancel(ctx), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	if err := chromedp.Do(bctx); err != nil {
		return pdfBenchRun{}, fmt.Errorf("start chromium: %w", err)
	}
	docs := benchDocs()
	urls := make([]string, len(docs))
	for i, d := range docs {
		urls[i] = "data:text/html;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(d.html))
	}
	printDoc := func(tctx context.Context, i int) error {
		if err := chromedp.Do(tctx, chromedp.Navigate(urls[i%len(urls)])); err != nil {
			return err
		}
		if frames {
			// The service's wait before printing (script-drawn charts).
			if _, err := chromedp.Run(tctx, chromedp.Evaluate[bool](waitFramesJS, chromedp.EvalAwaitPromise)); err != nil {
				return err
			}
		}
		_, err := chromedp.Run(tctx, chromedp.PrintToPDF(chromedp.PDFPaper(chromedp.PaperA4)))
		return err
	}
	render := func(i int) error {
		tctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
		defer cancel()
		return printDoc(tctx, i)
	}
	name := "bare-isolated"
	if mode == "warm" {
		name = "bare-reuse"
		tabs := make(chan context.Context, c)
		for range c {
			tctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
			defer cancel()
			if err := chromedp.Do(tctx); err != nil {
				return pdfBenchRun{}, err
			}
			tabs <- tctx
		}
		render = func(i int) error {
			tctx := <-tabs
			defer func() { tabs <- tctx }()
			return printDoc(tctx, i)
		}
	}
	if err := render(0); err != nil {
		return pdfBenchRun{}, fmt.Errorf("bare warm-up: %w", err)
	}
	lat, elapsed, err := runPages(pages, c, render)
	if err != nil {
		return pdfBenchRun{}, err
	}
	return pdfBenchRun{Mode: name, Concurrency: c, Pages: pages, PagesPerSec: float64(pages) / elapsed.Seconds(),
		P50Ms: percentile(lat, .5), P99Ms: percentile(lat, .99)}, nil
}
