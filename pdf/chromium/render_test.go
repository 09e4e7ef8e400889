package chromium

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRender runs the functional cases on one shared pool (one browser), in
// sequence, to keep the cost of the suite low.
func TestRender(t *testing.T) {
	p := newTestPool(t, Config{Instances: 1, PagesPerInstance: 1})
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	var cssHits, imgHits atomic.Int64

	mux := http.NewServeMux()
	mux.HandleFunc("/plain", writeHTML(`<h1>Hello Baton</h1>`))
	mux.HandleFunc("/zh", writeHTML(`<html><head><meta charset="utf-8"></head><body><p>中文测试</p></body></html>`))
	mux.HandleFunc("/three", writeHTML(`<div style="page-break-after:always">PAGE-ONE</div><div style="page-break-after:always">PAGE-TWO</div><div>PAGE-THREE</div>`))
	mux.HandleFunc("/late", writeHTML(`<body><script>setTimeout(() => { const d = document.createElement('div'); d.id = 'late'; d.textContent = 'LATE-CONTENT'; document.body.appendChild(d) }, 300)</script></body>`))
	mux.HandleFunc("/chart", writeHTML(`<body style="margin:0"><canvas id="c" width="600" height="400" style="width:600px;height:400px"></canvas>
<script>requestAnimationFrame(() => { const g = document.getElementById('c').getContext('2d');
 g.fillStyle = '#1040c0'; for (let i = 0; i < 6; i++) g.fillRect(20 + i*95, 380 - (i+1)*60, 70, (i+1)*60); });</script></body>`))
	mux.HandleFunc("/style.css", func(w http.ResponseWriter, r *http.Request) {
		cssHits.Add(1)
		w.Header().Set("Content-Type", "text/css")
		fmt.Fprint(w, `.marker::after { content: "CSS-LOADED"; }`)
	})
	mux.HandleFunc("/img.png", func(w http.ResponseWriter, r *http.Request) {
		imgHits.Add(1)
		img := image.NewRGBA(image.Rect(0, 0, 4, 4))
		w.Header().Set("Content-Type", "image/png")
		_ = png.Encode(w, img)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		c, _ := r.Cookie("flavour")
		v := "NO-COOKIE"
		if c != nil {
			v = "COOKIE-" + c.Value
		}
		fmt.Fprintf(w, "<p>%s</p><p>HDR-%s</p><p>UA-%s</p>", v, r.Header.Get("X-Test"), strings.ReplaceAll(r.UserAgent(), " ", "_"))
	})
	mux.HandleFunc("/set-cookie", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "flavour", Value: "leaked", Path: "/"})
		writeHTML("<p>set</p>")(w, r)
	})
	mux.HandleFunc("/media", writeHTML(`<style>@media screen { .m::after { content: "MEDIA-SCREEN" } } @media print { .m::after { content: "MEDIA-PRINT" } }</style><p class="m"></p>`))
	mux.HandleFunc("/idle", writeHTML(`<body><script>addEventListener('load', () => fetch('/slow-json').then(r => r.text()).then(t => { const p = document.createElement('p'); p.textContent = t; document.body.appendChild(p) }))</script></body>`))
	mux.HandleFunc("/slow-json", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		case <-timeAfter(300):
		}
		fmt.Fprint(w, "IDLE-FETCHED")
	})
	mux.HandleFunc("/never", writeHTML(`<p>never loads</p><script src="/hang.js"></script>`))
	mux.HandleFunc("/hang.js", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	srv := htmlServer(t, mux)
	ctx := context.Background()

	render := func(t *testing.T, job Job) Output {
		t.Helper()
		out, err := p.Render(ctx, job)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		return out
	}

	t.Run("plain text", func(t *testing.T) {
		out := render(t, Job{URL: srv.URL + "/plain"})
		if txt := pdfText(t, out.PDF); !strings.Contains(txt, "Hello Baton") {
			t.Fatalf("text %q lacks Hello Baton", txt)
		}
		if out.Status != 200 {
			t.Errorf("status %d", out.Status)
		}
	})
	t.Run("chinese text", func(t *testing.T) {
		out := render(t, Job{URL: srv.URL + "/zh"})
		if txt := pdfText(t, out.PDF); !strings.Contains(txt, "中文测试") {
			t.Fatalf("text %q lacks 中文测试 (are fonts-noto-cjk installed?)", txt)
		}
	})
	t.Run("header and footer", func(t *testing.T) {
		out := render(t, Job{URL: srv.URL + "/three", Options: Options{
			HeaderTemplate: `<div style="font-size:10px;width:100%">HDRMARK <span class="pageNumber"></span></div>`,
			FooterTemplate: `<div style="font-size:10px;width:100%">FTRMARK</div>`,
			Margin:         &Margin{Top: "2cm", Bottom: "2cm"},
		}})
		txt := pdfText(t, out.PDF)
		if n := strings.Count(txt, "HDRMARK"); n != 3 {
			t.Errorf("header printed %d times, want 3: %q", n, txt)
		}
		if n := strings.Count(txt, "FTRMARK"); n != 3 {
			t.Errorf("footer printed %d times, want 3", n)
		}
	})
	t.Run("paper size", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			opts Options
			w, h float64 // points
		}{
			{"default A4", Options{}, 595.44, 841.68},
			{"A5 landscape", Options{Format: "A5", Landscape: true}, 595.44, 419.76},
			{"Letter", Options{Format: "letter"}, 612, 792},
			{"custom mm", Options{Width: "100mm", Height: "50mm"}, 283.46, 141.73},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out := render(t, Job{URL: srv.URL + "/plain", Options: tc.opts})
				w, h := pageSize(t, pdfInfo(t, out.PDF))
				if math.Abs(w-tc.w) > 2 || math.Abs(h-tc.h) > 2 {
					t.Fatalf("page size %.2f x %.2f pts, want %.2f x %.2f", w, h, tc.w, tc.h)
				}
			})
		}
	})
	t.Run("page ranges", func(t *testing.T) {
		out := render(t, Job{URL: srv.URL + "/three"})
		if n := pageCount(t, out.PDF); n != 3 {
			t.Fatalf("all pages: %d, want 3", n)
		}
		out = render(t, Job{URL: srv.URL + "/three", Options: Options{PageRanges: "2-3"}})
		if n := pageCount(t, out.PDF); n != 2 {
			t.Fatalf("pageRanges 2-3: %d pages, want 2", n)
		}
		if txt := pdfText(t, out.PDF); strings.Contains(txt, "PAGE-ONE") || !strings.Contains(txt, "PAGE-TWO") {
			t.Fatalf("pageRanges 2-3 text %q", txt)
		}
		_, err := p.Render(ctx, Job{URL: srv.URL + "/three", Options: Options{PageRanges: "9"}})
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("pageRanges beyond the document: %v, want ErrInvalid", err)
		}
	})
	t.Run("waitForSelector", func(t *testing.T) {
		out := render(t, Job{URL: srv.URL + "/late", Options: Options{WaitForSelector: "#late"}})
		if txt := pdfText(t, out.PDF); !strings.Contains(txt, "LATE-CONTENT") {
			t.Fatalf("text %q lacks LATE-CONTENT", txt)
		}
		_, err := p.Render(ctx, Job{URL: srv.URL + "/late", Options: Options{WaitForSelector: "#[["}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(ClientMessage(err), "waitForSelector") {
			t.Fatalf("bad selector: %v", err)
		}
	})
	t.Run("networkidle", func(t *testing.T) {
		out := render(t, Job{URL: srv.URL + "/idle", Options: Options{WaitUntil: WaitNetworkIdle}})
		if txt := pdfText(t, out.PDF); !strings.Contains(txt, "IDLE-FETCHED") {
			t.Fatalf("text %q lacks IDLE-FETCHED", txt)
		}
	})
	t.Run("canvas chart drawn in requestAnimationFrame", func(t *testing.T) {
		out := render(t, Job{URL: srv.URL + "/chart", Options: Options{PrintBackground: true, Margin: &Margin{Top: "0", Right: "0", Bottom: "0", Left: "0"}}})
		dir := t.TempDir()
		if err := exec.Command("pdftoppm", "-r", "30", "-png", "-f", "1", "-l", "1", writePDF(t, out.PDF), filepath.Join(dir, "p")).Run(); err != nil {
			t.Fatalf("pdftoppm: %v", err)
		}
		matches, _ := filepath.Glob(filepath.Join(dir, "p*.png"))
		if len(matches) != 1 {
			t.Fatalf("pdftoppm wrote %v", matches)
		}
		data, _ := os.ReadFile(matches[0])
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		// The chart covers 600x400 CSS px = 6.25x4.17 in from the top left,
		// about 187x125 pixels at 30 dpi.
		blue := 0
		for y := 0; y < 120 && y < img.Bounds().Dy(); y++ {
			for x := 0; x < 180 && x < img.Bounds().Dx(); x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				if b > 0x8000 && r < 0x6000 && g < 0x8000 {
					blue++
				}
			}
		}
		if blue < 500 {
			t.Fatalf("chart area has %d blue pixels: the canvas printed blank", blue)
		}
	})
	t.Run("inline html with BaseURL", func(t *testing.T) {
		out := render(t, Job{BaseURL: srv.URL + "/assets/", HTML: `<html><head><link rel="stylesheet" href="../style.css"></head>
<body><p class="marker">INLINE-</p><img src="/img.png"></body></html>`})
		if txt := pdfText(t, out.PDF); !strings.Contains(txt, "INLINE-") || !strings.Contains(txt, "CSS-LOADED") {
			t.Fatalf("text %q lacks the inline text or the CSS content", txt)
		}
		if cssHits.Load() == 0 || imgHits.Load() == 0 {
			t.Fatalf("relative resources not loaded: css %d img %d", cssHits.Load(), imgHits.Load())
		}
	})
	t.Run("inline html without BaseURL", func(t *testing.T) {
		out := render(t, Job{HTML: `<p>只有内联 INLINE-ONLY</p>`})
		if txt := pdfText(t, out.PDF); !strings.Contains(txt, "INLINE-ONLY") || !strings.Contains(txt, "只有内联") {
			t.Fatalf("text %q", txt)
		}
	})
	t.Run("cookies headers user agent", func(t *testing.T) {
		out := render(t, Job{URL: srv.URL + "/echo", Options: Options{
			Cookies:          []Cookie{{Name: "flavour", Value: "mint"}},
			ExtraHTTPHeaders: map[string]string{"x-test": "yes"},
			UserAgent:        "BatonTest/1.0",
		}})
		txt := pdfText(t, out.PDF)
		for _, want := range []string{"COOKIE-mint", "HDR-yes", "UA-BatonTest/1.0"} {
			if !strings.Contains(txt, want) {
				t.Errorf("text %q lacks %s", txt, want)
			}
		}
	})
	t.Run("tasks are isolated", func(t *testing.T) {
		render(t, Job{URL: srv.URL + "/set-cookie"})
		out := render(t, Job{URL: srv.URL + "/echo"})
		if txt := pdfText(t, out.PDF); !strings.Contains(txt, "NO-COOKIE") {
			t.Fatalf("a cookie of the previous task leaked: %q", txt)
		}
	})
	t.Run("emulateMedia", func(t *testing.T) {
		if txt := pdfText(t, render(t, Job{URL: srv.URL + "/media"}).PDF); !strings.Contains(txt, "MEDIA-PRINT") {
			t.Errorf("default media: %q", txt)
		}
		if txt := pdfText(t, render(t, Job{URL: srv.URL + "/media", Options: Options{EmulateMedia: "screen"}}).PDF); !strings.Contains(txt, "MEDIA-SCREEN") {
			t.Errorf("screen media: %q", txt)
		}
	})
	t.Run("page that never finishes loading", func(t *testing.T) {
		_, err := p.Render(ctx, Job{URL: srv.URL + "/never", Options: Options{TimeoutMs: 1500}})
		if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrStalled) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		if ErrorKind(err) != KindTimeout || ClientMessage(err) == "" {
			t.Errorf("kind %q message %q", ErrorKind(err), ClientMessage(err))
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, err = p.Render(ctx, Job{URL: "http://" + addr + "/"})
		if !errors.Is(err, ErrNavigation) || !strings.Contains(ClientMessage(err), "ERR_CONNECTION_REFUSED") {
			t.Fatalf("err = %v, want ErrNavigation naming ERR_CONNECTION_REFUSED", err)
		}
	})
	t.Run("invalid jobs", func(t *testing.T) {
		for _, job := range []Job{
			{},
			{URL: "file:///etc/passwd"},
			{URL: "javascript:alert(1)"},
			{URL: srv.URL, HTML: "<p>"},
			{HTML: "<p>", BaseURL: "file:///tmp/"},
			{URL: srv.URL, Options: Options{Scale: 3}},
		} {
			if _, err := p.Render(ctx, job); !errors.Is(err, ErrInvalid) {
				t.Errorf("%+v: err = %v, want ErrInvalid", job, err)
			}
		}
	})
	t.Run("caller cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := p.Render(cctx, Job{URL: srv.URL + "/plain"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	// The pool is still healthy after all of the above.
	if st := p.Stats(); st[0].Restarts[ReasonCrash]+st[0].Restarts[ReasonUnhealthy] != 0 {
		t.Fatalf("unexpected restarts: %+v", st)
	}
}
