package admin

import (
	"fmt"
	"html/template"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"
)

// templateFuncs are the helpers every page may use; none depends on the
// language (translations go through the page's T and Tf methods).
var templateFuncs = template.FuncMap{
	"ts":    formatTime,
	"ms":    humanMs,
	"inc":   func(i int) int { return i + 1 },
	"trunc": truncate,
	"bytes": humanBytes,
}

// parseTemplates parses layout.html with each page into its own set.
func (u *UI) parseTemplates() error {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	u.pages = map[string]*template.Template{}
	for _, n := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.New(page).Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return fmt.Errorf("admin: parse template %s: %w", n, err)
		}
		u.pages[page] = t
	}
	return nil
}

// formatTime shows a time in UTC to the second; zero and nil show "–".
func formatTime(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

// truncate cuts s to n runes, adding an ellipsis.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func humanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
