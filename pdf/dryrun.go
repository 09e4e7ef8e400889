package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/html"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/httpapi"
)

// Dry-run limits.
const (
	maxProbeBody      = 2 << 20 // bytes of a page read to count its resources
	maxProbeResources = 16      // sub-resources checked for reachability
	probeParallel     = 4
)

// DryRun is the answer of POST /api/tasks/validate (seed §6): what a render
// would meet, without rendering.
type DryRun struct {
	OK                    bool     `json:"ok"`
	CanRender             bool     `json:"canRender"`
	SuggestedQueue        string   `json:"suggestedQueue"`
	EstimatedRenderTimeMs int64    `json:"estimatedRenderTimeMs"`
	Issues                []string `json:"issues"`
	SSRFBlocked           bool     `json:"ssrfBlocked"`
	// Details behind the verdict.
	Bytes       int64          `json:"bytes"`
	Resources   map[string]int `json:"resources"`
	HTTPStatus  int            `json:"httpStatus,omitempty"`
	Blocked     []string       `json:"blocked,omitempty"`
	Unreachable []string       `json:"unreachable,omitempty"`
}

func (s *Service) validate(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.auth(r); err != nil {
		return err
	}
	var req CreateRequest
	if err := httpapi.DecodeJSON(w, r, s.bodyLimit(), &req); err != nil {
		return err
	}
	opts, err := req.Validate(s.cfg.MaxHTMLBytes)
	if err != nil {
		if code := baton.ErrorCode(err); code != baton.EInvalid && code != baton.ETooLarge {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, DryRun{Issues: []string{"invalid: " + baton.ErrorMessage(err)}, SuggestedQueue: QueueNormal, Resources: map[string]int{}})
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*s.cfg.ProbeTimeout)
	defer cancel()
	httpapi.WriteJSON(w, http.StatusOK, s.analyze(ctx, req, opts))
	return nil
}

// analyze is the dry run: static analysis of inline HTML, a bounded GET of a
// URL, and a reachability check of up to maxProbeResources sub-resources —
// every connection through the same egress policy the renderer uses, so
// ssrfBlocked is the guard's own decision (a refused address is never
// connected to).
func (s *Service) analyze(ctx context.Context, req CreateRequest, opts chromiumOptions) DryRun {
	dr := DryRun{CanRender: true, Issues: []string{}, Resources: map[string]int{}}
	var doc []byte
	var base *url.URL
	switch req.Source.Type {
	case "html":
		doc = []byte(req.Source.Content)
		if req.Source.BaseURL != "" {
			base, _ = url.Parse(req.Source.BaseURL)
		}
	case "url":
		u, err := s.cfg.Policy.CheckURL(req.Source.Content)
		if err != nil {
			dr.CanRender = false
			if baton.ErrorCode(err) == baton.EForbidden {
				dr.SSRFBlocked = true
				dr.Issues = append(dr.Issues, "ssrf-blocked: "+baton.ErrorMessage(err))
			} else {
				dr.Issues = append(dr.Issues, "invalid-url: "+baton.ErrorMessage(err))
			}
			break
		}
		body, final, status, ctype, err := s.fetch(ctx, u.String())
		if err != nil {
			dr.CanRender = false
			if baton.ErrorCode(err) == baton.EForbidden {
				dr.SSRFBlocked = true
				dr.Issues = append(dr.Issues, "ssrf-blocked: "+baton.ErrorMessage(err))
			} else {
				dr.Issues = append(dr.Issues, "unreachable: "+err.Error())
			}
			break
		}
		dr.HTTPStatus = status
		if status >= 400 {
			dr.Issues = append(dr.Issues, fmt.Sprintf("http-status: %d", status))
		}
		if mt, _, _ := mime.ParseMediaType(ctype); mt == "text/html" || mt == "application/xhtml+xml" || mt == "" {
			doc, base = body, final
		} else {
			dr.Bytes = int64(len(body))
			dr.Issues = append(dr.Issues, "content-type: "+mt)
		}
	}
	if doc != nil {
		dr.Bytes = int64(len(doc))
		res, fonts, relative := resources(doc, base)
		for _, r := range res {
			dr.Resources[r.kind]++
		}
		for _, k := range sortedKeys(dr.Resources) {
			dr.Issues = append(dr.Issues, fmt.Sprintf("%s: %d", k, dr.Resources[k]))
		}
		if fonts {
			dr.Issues = append(dr.Issues, "external-fonts")
		}
		if relative > 0 {
			dr.Issues = append(dr.Issues, fmt.Sprintf("relative-without-baseUrl: %d", relative))
		}
		dr.Blocked, dr.Unreachable = s.probeAll(ctx, res)
		for _, b := range dr.Blocked {
			dr.Issues = append(dr.Issues, "blocked: "+b)
		}
		for _, u := range dr.Unreachable {
			dr.Issues = append(dr.Issues, "unreachable: "+u)
		}
	}
	n := 0
	for _, c := range dr.Resources {
		n += c
	}
	est := 700 + dr.Bytes/1024*2 + int64(n)*60 + int64(opts.WaitDelayMs) + int64(len(dr.Unreachable))*1500
	if opts.WaitUntil == "networkidle" {
		est += 600
	}
	if opts.WaitForSelector != "" {
		est += 300
	}
	dr.EstimatedRenderTimeMs = est
	switch {
	case est > 8000 || dr.Bytes > 2<<20 || n > 100:
		dr.SuggestedQueue = QueueSlow
	case est <= 2500 && len(dr.Unreachable) == 0:
		dr.SuggestedQueue = QueueFast
	default:
		dr.SuggestedQueue = QueueNormal
	}
	dr.OK = dr.CanRender && !dr.SSRFBlocked && len(dr.Blocked) == 0 && len(dr.Unreachable) == 0 && dr.HTTPStatus < 400
	return dr
}

// fetch GETs u through the egress policy with a bounded time and size.
func (s *Service) fetch(ctx context.Context, u string) ([]byte, *url.URL, int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, 0, "", err
	}
	req.Header.Set("User-Agent", "baton-dry-run/1")
	resp, err := s.probe.Do(req)
	if err != nil {
		return nil, nil, 0, "", probeErr(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, nil, 0, "", probeErr(err)
	}
	return b, resp.Request.URL, resp.StatusCode, resp.Header.Get("Content-Type"), nil
}

// probeErr keeps the egress refusal (its client-safe message) or reduces a
// transport error to a short text without the request line.
func probeErr(err error) error {
	var be *baton.Error
	if errors.As(err, &be) {
		return be
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("timed out")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// probeAll checks up to maxProbeResources sub-resources with HEAD.
func (s *Service) probeAll(ctx context.Context, res []resource) (blocked, unreachable []string) {
	if len(res) > maxProbeResources {
		res = res[:maxProbeResources]
	}
	var mu sync.Mutex
	sem := make(chan struct{}, probeParallel)
	var wg sync.WaitGroup
	for _, r := range res {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := s.cfg.Policy.CheckURL(r.url); err != nil {
				mu.Lock()
				blocked = append(blocked, r.url)
				mu.Unlock()
				return
			}
			pctx, cancel := context.WithTimeout(ctx, min(s.cfg.ProbeTimeout, 2*time.Second))
			defer cancel()
			req, err := http.NewRequestWithContext(pctx, http.MethodHead, r.url, nil)
			if err != nil {
				return
			}
			resp, err := s.probe.Do(req)
			if err != nil {
				mu.Lock()
				if baton.ErrorCode(probeErr(err)) == baton.EForbidden {
					blocked = append(blocked, r.url)
				} else {
					unreachable = append(unreachable, r.url)
				}
				mu.Unlock()
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	sort.Strings(blocked)
	sort.Strings(unreachable)
	return blocked, unreachable
}

type resource struct {
	kind string // images, scripts, stylesheets, iframes, fonts, media
	url  string
}

var cssURLRE = regexp.MustCompile(`url\(\s*['"]?([^'")\s]+)['"]?\s*\)`)

// resources lists the distinct absolute http(s) sub-resources of an HTML
// document (img, script, link, iframe, source/video/audio, CSS url() in
// style elements and attributes), whether it loads web fonts, and how many
// relative references could not be resolved (no base URL).
func resources(doc []byte, base *url.URL) (out []resource, fonts bool, relative int) {
	seen := map[string]bool{}
	add := func(kind, ref string) {
		ref = strings.TrimSpace(ref)
		if ref == "" || strings.HasPrefix(ref, "data:") || strings.HasPrefix(ref, "#") || strings.HasPrefix(ref, "javascript:") || strings.HasPrefix(ref, "blob:") {
			return
		}
		u, err := url.Parse(ref)
		if err != nil {
			return
		}
		if !u.IsAbs() {
			if base == nil {
				relative++
				return
			}
			u = base.ResolveReference(u)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			if u.Scheme != "" {
				out = append(out, resource{kind, u.String()}) // judged (and refused) by the probe
			}
			return
		}
		u.Fragment = ""
		if seen[u.String()] {
			return
		}
		seen[u.String()] = true
		out = append(out, resource{kind, u.String()})
	}
	css := func(text string) {
		if strings.Contains(text, "@font-face") {
			fonts = true
		}
		for _, m := range cssURLRE.FindAllStringSubmatch(text, -1) {
			kind := "images"
			if isFontURL(m[1]) {
				kind, fonts = "fonts", true
			}
			add(kind, m[1])
		}
	}
	z := html.NewTokenizer(strings.NewReader(string(doc)))
	inStyle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return out, fonts, relative
		case html.TextToken:
			if inStyle {
				css(string(z.Text()))
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "style" {
				inStyle = false
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			if st, ok := attrs["style"]; ok {
				css(st)
			}
			switch string(name) {
			case "style":
				inStyle = tt == html.StartTagToken
			case "img":
				add("images", attrs["src"])
			case "script":
				add("scripts", attrs["src"])
			case "iframe", "frame", "embed":
				add("iframes", attrs["src"])
			case "video", "audio", "source", "track":
				add("media", attrs["src"])
			case "link":
				rel := strings.ToLower(attrs["rel"])
				switch {
				case strings.Contains(rel, "stylesheet"):
					add("stylesheets", attrs["href"])
				case strings.Contains(rel, "preload") && attrs["as"] == "font", isFontURL(attrs["href"]):
					fonts = true
					add("fonts", attrs["href"])
				case strings.Contains(rel, "icon"):
					add("images", attrs["href"])
				}
			}
		}
	}
}

func isFontURL(u string) bool {
	u = strings.ToLower(u)
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	for _, ext := range []string{".woff2", ".woff", ".ttf", ".otf", ".eot"} {
		if strings.HasSuffix(u, ext) {
			return true
		}
	}
	return strings.Contains(u, "fonts.googleapis.com")
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
