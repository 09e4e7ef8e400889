package chinaz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/batonhq/baton/internal/golden"

	"github.com/batonhq/baton/check/httpcheck"
)

func golden(t *testing.T, path string, got any) { goldenfile.JSON(t, path, got) }

func defaultPaths() []httpcheck.Path {
	var ps []httpcheck.Path
	for _, s := range DefaultWeightPaths {
		ps = append(ps, httpcheck.MustParsePath(s))
	}
	return ps
}

// TestParseGolden reads the envelope of providers.md ({StateCode, Reason,
// Result}) and the weight through the default (guessed) paths.
func TestParseGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	more, _ := filepath.Glob("testdata/*.html")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			env, err := ParseEnvelope(body)
			out := map[string]any{"envelope": env}
			if err != nil {
				out["error"] = err.Error()
			} else {
				w, found := Weight(env.Doc, defaultPaths())
				out["weight"], out["found"] = w, found
			}
			golden(t, strings.TrimSuffix(f, filepath.Ext(f))+".golden", out)
		})
	}
}

func FuzzParseEnvelope(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b, "Result.BaiduPcWeight")
	}
	f.Add([]byte(`{"StateCode":1,"Result":{"a":[{"w":"7"},{"w":9}]}}`), "Result.a[*].w")
	f.Add([]byte(`{"StateCode":1,"Result":{"a/b":{"~":1}}}`), "/Result/a~1b/~0")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		env, err := ParseEnvelope(body)
		if err != nil {
			return
		}
		if env.StateCode == nil {
			t.Fatal("no error and no StateCode")
		}
		p, err := httpcheck.ParsePath(path)
		if err != nil {
			return
		}
		w, found := Weight(env.Doc, []httpcheck.Path{p})
		if found == nil && w != 0 {
			t.Fatalf("weight %d with nothing found", w)
		}
		for _, v := range found {
			if v > w {
				t.Fatalf("found %d above the max %d", v, w)
			}
		}
	})
}
