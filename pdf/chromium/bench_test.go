package chromium

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var benchDocs = []struct{ name, body string }{
	{"ascii", `<html><body><h1>Invoice 1042</h1><p>The quick brown fox jumps over the lazy dog. 0123456789</p></body></html>`},
	{"chinese", `<html><head><meta charset="utf-8"></head><body><h1>发票 1042</h1><p>中文测试：敏捷的棕色狐狸跳过了懒狗。</p></body></html>`},
}

// runConcurrent runs b.N calls of op on c goroutines and reports pages/s.
func runConcurrent(b *testing.B, c int, op func() error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	b.ResetTimer()
	start := time.Now()
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pages/s")
}

// BenchmarkRender compares the pool (new browser context + page per task)
// with a bare chromedp loop (new tab per page in the default context) at the
// same number of pages open at once. Run with -benchtime=Nx.
func BenchmarkRender(b *testing.B) {
	requireTools(b)
	mux := http.NewServeMux()
	for _, d := range benchDocs {
		mux.HandleFunc("/"+d.name, writeHTML(d.body))
	}
	srv := htmlServer(b, mux)

	pools := map[int]*Pool{}
	parent := b
	pool := func(c int) *Pool {
		if pools[c] == nil {
			pools[c] = newTestPool(parent, Config{Instances: 1, PagesPerInstance: c, HealthInterval: -1})
		}
		return pools[c]
	}
	var bare context.Context
	bareCtx := func() context.Context {
		b := parent
		if bare == nil {
			opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromiumPath), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true)}
			opts = append(append(opts, chromedp.DefaultExecAllocatorOptions[:]...), chromedp.DisableGPU, chromedp.NoSandbox)
			actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
			bctx, cancelB := chromedp.NewContext(actx)
			if err := chromedp.Do(bctx); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cancelB(); cancelA() })
			bare = bctx
		}
		return bare
	}

	for _, d := range benchDocs {
		url := srv.URL + "/" + d.name
		for _, c := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/pool/c%d", d.name, c), func(b *testing.B) {
				p := pool(c)
				runConcurrent(b, c, func() error {
					_, err := p.Render(context.Background(), Job{URL: url})
					return err
				})
			})
			b.Run(fmt.Sprintf("%s/bare-chromedp/c%d", d.name, c), func(b *testing.B) {
				bctx := bareCtx()
				runConcurrent(b, c, func() error {
					tctx, cancel := chromedp.NewContext(bctx)
					defer cancel()
					if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
						return err
					}
					_, err := chromedp.Run(tctx, chromedp.PrintToPDF(chromedp.PDFPaper(chromedp.PaperA4)))
					return err
				})
			})
		}
	}
}
