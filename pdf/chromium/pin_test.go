package chromium

import (
	"os"
	"strings"
	"testing"
)

// The Chromium major version and the chromedp version the rendering tests
// (TestRender: text, Chinese, header/footer, paper sizes, page ranges, a
// canvas drawn in requestAnimationFrame) were last reviewed against. An
// upgrade of either fails TestPinnedVersions until these are updated — on
// purpose: run the rendering tests, look at their PDFs, then bump.
const (
	pinnedChromiumMajor = "156"
	pinnedChromedp      = "v0.23.0"
)

// TestPinnedVersions guards Chromium and chromedp upgrades (see above).
func TestPinnedVersions(t *testing.T) {
	p := newTestPool(t, Config{Instances: 1, PagesPerInstance: 1, HealthInterval: -1})
	v := p.Stats()[0].Version // e.g. HeadlessChrome/156.0.8078.108
	_, num, _ := strings.Cut(v, "/")
	if major, _, _ := strings.Cut(num, "."); major != pinnedChromiumMajor {
		t.Errorf("Chromium is %q, the rendering tests were reviewed on major %s: check TestRender's PDFs, then update pinnedChromiumMajor", v, pinnedChromiumMajor)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/chromedp/chromedp" {
			if f[1] != pinnedChromedp {
				t.Errorf("go.mod requires chromedp %s, the rendering tests were reviewed on %s: check TestRender's PDFs (chromedp 0.15 once broke requestAnimationFrame painting), then update pinnedChromedp", f[1], pinnedChromedp)
			}
			return
		}
	}
	t.Fatal("go.mod does not require github.com/chromedp/chromedp")
}
