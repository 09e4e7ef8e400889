package chromium

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromiumPath is the browser the tests use: the production default.
var chromiumPath = DefaultChromiumPath()

// requireTools fails (never skips) the test when a real dependency is
// missing.
func requireTools(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("Chromium is required at %s: apt-get install chromium-headless-shell fonts-noto-cjk poppler-utils (%v)", chromiumPath, err)
	}
	for _, tool := range []string{"pdftotext", "pdfinfo", "pdftoppm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required to check PDFs: apt-get install poppler-utils (%v)", tool, err)
		}
	}
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func newTestPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	requireTools(t)
	cfg.ChromiumPath = chromiumPath
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func writePDF(t testing.TB, pdf []byte) string {
	t.Helper()
	if len(pdf) < 5 || string(pdf[:5]) != "%PDF-" {
		t.Fatalf("output is not a PDF (%d bytes)", len(pdf))
	}
	f := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(f, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// pdfText extracts the text of pdf with pdftotext.
func pdfText(t testing.TB, pdf []byte) string {
	t.Helper()
	out, err := exec.Command("pdftotext", "-enc", "UTF-8", writePDF(t, pdf), "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

// pdfInfo returns pdfinfo's fields.
func pdfInfo(t testing.TB, pdf []byte) map[string]string {
	t.Helper()
	out, err := exec.Command("pdfinfo", writePDF(t, pdf)).Output()
	if err != nil {
		t.Fatalf("pdfinfo: %v", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// pageSize parses pdfinfo's "Page size: 595.28 x 841.89 pts (A4)".
func pageSize(t testing.TB, info map[string]string) (w, h float64) {
	t.Helper()
	f := strings.Fields(info["Page size"])
	if len(f) < 3 {
		t.Fatalf("no page size in %v", info)
	}
	w, _ = strconv.ParseFloat(f[0], 64)
	h, _ = strconv.ParseFloat(f[2], 64)
	return w, h
}

func pageCount(t testing.TB, pdf []byte) int {
	t.Helper()
	n, err := strconv.Atoi(pdfInfo(t, pdf)["Pages"])
	if err != nil {
		t.Fatalf("pdfinfo pages: %v", err)
	}
	return n
}

func htmlServer(t testing.TB, mux *http.ServeMux) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func writeHTML(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}
}

// isGone reports whether pid no longer runs (absent or a zombie).
func isGone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func timeAfter(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }
