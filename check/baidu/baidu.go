package baidu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/httpcheck"
	"github.com/batonhq/baton/check/wordlist"
)

// Step is the pipeline step name of this checker.
const Step = "baidu"

// DefaultBaseURL is Baidu web search; the query is <base>/s?wd=site:<domain>.
const DefaultBaseURL = "https://www.baidu.com"

// Marker is a named regexp whose first capture group is a result count.
type Marker struct {
	// Name is recorded in evidence as the marker that matched.
	Name string `json:"name"`
	// Pattern is a regexp over the raw HTML with one capture group (the count).
	Pattern string `json:"pattern"`
}

// countChars are the characters a printed count may contain.
const countChars = `[0-9０-９,，.．万亿]+`

// DefaultCountMarkers are the count markers from providers.md, tried in order.
var DefaultCountMarkers = []Marker{
	{Name: "site-indexed", Pattern: `该网站共有\s*(?:<[^>]*>\s*)*(` + countChars + `)\s*(?:<[^>]*>\s*)*个网页被百度收录`},
	{Name: "result-count", Pattern: `找到相关结果数?约?\s*(?:<[^>]*>\s*)*(` + countChars + `)\s*(?:<[^>]*>\s*)*个`},
}

// DefaultZeroMarkers are the zero-result texts from providers.md.
var DefaultZeroMarkers = []string{`很抱歉，没有找到与`, `没有找到该URL。您可以直接访问`}

// DefaultCaptchaMarkers are the anti-bot page texts from providers.md.
var DefaultCaptchaMarkers = []string{`<title>\s*百度安全验证\s*</title>`, `请完成验证后继续访问`}

// DefaultCaptchaHosts are the anti-bot hosts a redirect may land on.
var DefaultCaptchaHosts = []string{"wappass.baidu.com", "verify.baidu.com"}

// DefaultUserAgent is a desktop browser's User-Agent (Baidu serves bots a captcha).
const DefaultUserAgent = httpcheck.DefaultUserAgent

// Config configures the baidu checker. Zero fields take the defaults
// documented on each field; nil marker lists take the defaults, empty
// non-nil lists disable them.
type Config struct {
	// BaseURL of Baidu search. Default DefaultBaseURL.
	BaseURL string `json:"baseUrl"`
	// MinIndexed: a count at or above it passes, below rejects. Default 1.
	MinIndexed int64 `json:"minIndexed"`
	// CountMarkers are tried in order; the first that matches and parses
	// gives the count. Default DefaultCountMarkers.
	CountMarkers []Marker `json:"countMarkers"`
	// ZeroMarkers are regexps that mean "no result" (count 0). Default DefaultZeroMarkers.
	ZeroMarkers []string `json:"zeroMarkers"`
	// CaptchaMarkers are regexps of an anti-bot page: retry. Default DefaultCaptchaMarkers.
	CaptchaMarkers []string `json:"captchaMarkers"`
	// CaptchaHosts: a final URL on one of these hosts is an anti-bot page.
	// Default DefaultCaptchaHosts.
	CaptchaHosts []string `json:"captchaHosts"`
	// TitleSelector picks the result titles scanned with the word lists
	// (httpcheck.Selector syntax). Default "h3".
	TitleSelector string `json:"titleSelector"`
	// MaxTitles bounds the titles scanned and kept. Default 20.
	MaxTitles int `json:"maxTitles"`
	// UserAgent sent to Baidu. Default DefaultUserAgent.
	UserAgent string `json:"userAgent"`
	// AcceptLanguage sent to Baidu. Default "zh-CN,zh;q=0.9,en;q=0.8".
	AcceptLanguage string `json:"acceptLanguage"`
	// Timeout bounds one request. Default 15s.
	Timeout time.Duration `json:"timeout"`
	// MaxBody caps the page read. Default 2 MiB.
	MaxBody int64 `json:"maxBody"`
	// MaxEvidence caps the raw page kept in evidence. Default 4 KiB.
	MaxEvidence int `json:"maxEvidence"`
}

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimSuffix(c.BaseURL, "/")
	if c.MinIndexed <= 0 {
		c.MinIndexed = 1
	}
	if c.CountMarkers == nil {
		c.CountMarkers = DefaultCountMarkers
	}
	if c.ZeroMarkers == nil {
		c.ZeroMarkers = DefaultZeroMarkers
	}
	if c.CaptchaMarkers == nil {
		c.CaptchaMarkers = DefaultCaptchaMarkers
	}
	if c.CaptchaHosts == nil {
		c.CaptchaHosts = DefaultCaptchaHosts
	}
	if c.TitleSelector == "" {
		c.TitleSelector = "h3"
	}
	if c.MaxTitles <= 0 {
		c.MaxTitles = 20
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.AcceptLanguage == "" {
		c.AcceptLanguage = "zh-CN,zh;q=0.9,en;q=0.8"
	}
	if c.Timeout <= 0 {
		c.Timeout = check.DefaultTimeout
	}
	if c.MaxBody <= 0 {
		c.MaxBody = check.DefaultMaxBody
	}
	if c.MaxEvidence <= 0 {
		c.MaxEvidence = check.DefaultMaxEvidence
	}
	return c
}

type countMarker struct {
	name string
	re   *regexp.Regexp
}

type compiled struct {
	counts  []countMarker
	zero    []*regexp.Regexp
	captcha []*regexp.Regexp
	titles  *httpcheck.Selector
}

// Validate reports configuration errors.
func (c Config) Validate() error {
	_, err := c.withDefaults().compile()
	return err
}

func (c Config) compile() (*compiled, error) {
	var errs []error
	var out compiled
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("baidu: baseUrl %q must be an http(s) URL", c.BaseURL))
	}
	for _, m := range c.CountMarkers {
		re, err := regexp.Compile(m.Pattern)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("baidu: count marker %q: %w", m.Name, err))
		case re.NumSubexp() < 1:
			errs = append(errs, fmt.Errorf("baidu: count marker %q needs a capture group for the count", m.Name))
		case m.Name == "":
			errs = append(errs, fmt.Errorf("baidu: count marker %q has no name", m.Pattern))
		default:
			out.counts = append(out.counts, countMarker{m.Name, re})
		}
	}
	res := func(what string, pats []string) []*regexp.Regexp {
		var rs []*regexp.Regexp
		for _, p := range pats {
			re, err := regexp.Compile(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("baidu: %s %q: %w", what, p, err))
				continue
			}
			rs = append(rs, re)
		}
		return rs
	}
	out.zero = res("zero marker", c.ZeroMarkers)
	out.captcha = res("captcha marker", c.CaptchaMarkers)
	sel, err := httpcheck.ParseSelector(c.TitleSelector)
	if err != nil {
		errs = append(errs, fmt.Errorf("baidu: titleSelector: %w", err))
	}
	out.titles = sel
	if c.MaxEvidence > 1<<20 {
		errs = append(errs, fmt.Errorf("baidu: maxEvidence %d is more than 1 MiB", c.MaxEvidence))
	}
	return &out, errors.Join(errs...)
}

// Checker is the baidu step. It keeps one cookie jar (Baidu's BAIDUID
// cookies) for all its requests, like a browser. It is safe for concurrent use.
type Checker struct {
	cfg   Config
	cp    *compiled
	env   check.Env
	words *wordlist.Store
	fetch check.Fetcher
}

var _ check.Checker = (*Checker)(nil)

// New returns a baidu checker scanning result titles with words (nil = the
// embedded default lists). It does no I/O.
func New(cfg Config, env check.Env, words *wordlist.Store) (*Checker, error) {
	cfg = cfg.withDefaults()
	cp, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	env = env.Defaults()
	client := *env.HTTP // keep the caller's transport (egress guard), add a jar
	if client.Jar == nil {
		jar, err := cookiejar.New(nil)
		if err != nil {
			return nil, fmt.Errorf("baidu: cookie jar: %w", err)
		}
		client.Jar = jar
	}
	return &Checker{cfg: cfg, cp: cp, env: env, words: words, fetch: check.Fetcher{
		Client: &client, Timeout: cfg.Timeout, MaxBody: cfg.MaxBody, MaxEvidence: cfg.MaxEvidence,
		UserAgent: cfg.UserAgent, Now: env.Now,
	}}, nil
}

// Step returns "baidu".
func (c *Checker) Step() string { return Step }

// Decision rules recorded in evidence.
const (
	RuleTransient     = "transient"
	RuleCaptcha       = "captcha"
	RuleHTTPStatus    = "http-status"
	RuleUnrecognized  = "unrecognized-page"
	RuleBlackWord     = "black-word"
	RuleZero          = "zero-results"
	RuleBelow         = "below-min-indexed"
	RuleIndexed       = "indexed"
	RuleInvalidDomain = "invalid-domain"
)

// Evidence is the baidu step's Verdict.Data.
type Evidence struct {
	Domain     string    `json:"domain"`
	Query      string    `json:"query"`
	Rule       string    `json:"rule"`
	HTTPStatus int       `json:"httpStatus,omitempty"`
	FinalURL   string    `json:"finalUrl,omitempty"`
	Count      *int64    `json:"count,omitempty"`
	CountText  string    `json:"countText,omitempty"`
	Marker     string    `json:"marker,omitempty"` // count marker name, zero/captcha pattern
	MinIndexed int64     `json:"minIndexed"`
	Titles     []string  `json:"titles,omitempty"`
	Black      *WordHit  `json:"black,omitempty"`
	Signals    []WordHit `json:"signals,omitempty"`
	Raw        string    `json:"raw,omitempty"`
}

// WordHit is a word-list hit in a result title.
type WordHit struct {
	Title    string `json:"title"`
	Word     string `json:"word"`
	Category string `json:"category"`
	Black    bool   `json:"black"`
}

// Page is what Parse reads from a result page.
type Page struct {
	// Captcha is the matched anti-bot marker, "" if none.
	Captcha string `json:"captcha,omitempty"`
	// Count is the result count; nil when no count or zero marker matched.
	Count *int64 `json:"count,omitempty"`
	// CountText is the count as printed.
	CountText string `json:"countText,omitempty"`
	// Marker names the count marker or the zero pattern that matched.
	Marker string `json:"marker,omitempty"`
	// Titles are the result titles.
	Titles []string `json:"titles,omitempty"`
}

// Parse reads a result page with c's markers.
func (c *Checker) Parse(body []byte) Page {
	return parse(c.cp, c.cfg.MaxTitles, body)
}

func parse(cp *compiled, maxTitles int, body []byte) Page {
	var p Page
	for _, re := range cp.captcha {
		if re.Match(body) {
			p.Captcha = re.String()
			return p
		}
	}
	for _, m := range cp.counts {
		sub := m.re.FindSubmatch(body)
		if sub == nil {
			continue
		}
		n, err := ParseCount(string(sub[1]))
		if err != nil {
			continue
		}
		p.Count, p.CountText, p.Marker = &n, string(sub[1]), m.name
		break
	}
	if p.Count == nil {
		for _, re := range cp.zero {
			if re.Match(body) {
				zero := int64(0)
				p.Count, p.Marker = &zero, re.String()
				break
			}
		}
	}
	if doc, err := html.Parse(bytes.NewReader(body)); err == nil {
		for _, t := range cp.titles.Values(doc) {
			if t == "" {
				continue
			}
			if len(p.Titles) == maxTitles {
				break
			}
			p.Titles = append(p.Titles, check.TruncateUTF8(t, 256))
		}
	}
	return p
}

func hostname(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

// Check runs the baidu step for domain.
func (c *Checker) Check(ctx context.Context, domain string) check.Verdict {
	domain = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
	ev := &Evidence{Domain: domain, MinIndexed: c.cfg.MinIndexed}
	if !httpcheck.ValidDomain(domain) {
		ev.Rule = RuleInvalidDomain
		return check.NewVerdict(baton.OutcomeReject, "invalid domain name", ev)
	}
	ev.Query = c.cfg.BaseURL + "/s?" + url.Values{"wd": {"site:" + domain}}.Encode()
	resp, err := c.fetch.Get(ctx, ev.Query, http.Header{
		"Accept":          {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
		"Accept-Language": {c.cfg.AcceptLanguage},
	})
	if err != nil {
		ev.Rule = RuleTransient
		var te *check.TransientError
		if errors.As(err, &te) {
			ev.HTTPStatus, ev.Raw = te.StatusCode, te.Evidence
		}
		return check.RetryVerdict(err, ev)
	}
	ev.HTTPStatus, ev.FinalURL, ev.Raw = resp.StatusCode, resp.URL, resp.Evidence()
	if h := hostname(resp.FinalHost); slices.Contains(c.cfg.CaptchaHosts, strings.ToLower(h)) {
		ev.Rule, ev.Marker = RuleCaptcha, "host:"+h
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: redirected to %s", check.ErrCaptcha, h)}, ev)
	}
	page := c.Parse(resp.Body)
	if page.Captcha != "" {
		ev.Rule, ev.Marker = RuleCaptcha, page.Captcha
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: page matches %q", check.ErrCaptcha, page.Captcha)}, ev)
	}
	if resp.StatusCode != http.StatusOK {
		ev.Rule = RuleHTTPStatus
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: HTTP %d", check.ErrSuspiciousAnswer, resp.StatusCode)}, ev)
	}
	ev.Titles, ev.Count, ev.CountText, ev.Marker = page.Titles, page.Count, page.CountText, page.Marker

	lists := c.words.Load()
	for _, t := range page.Titles {
		for _, h := range lists.Match(t) {
			wh := WordHit{Title: t, Word: h.Word, Category: h.Category, Black: h.Black}
			if h.Black && ev.Black == nil {
				ev.Black = &wh
			} else if !h.Black {
				ev.Signals = append(ev.Signals, wh)
			}
		}
	}
	if b := ev.Black; b != nil {
		ev.Rule = RuleBlackWord
		return check.NewVerdict(baton.OutcomeBlackHit, fmt.Sprintf("black word %q (%s) in Baidu result title %q", b.Word, b.Category, b.Title), ev)
	}
	if page.Count == nil {
		ev.Rule = RuleUnrecognized
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: no count, zero or captcha marker on the page", check.ErrSuspiciousAnswer)}, ev)
	}
	switch n := *page.Count; {
	case n == 0:
		ev.Rule = RuleZero
		return check.NewVerdict(baton.OutcomeReject, "Baidu has indexed no page of "+domain, ev)
	case n < c.cfg.MinIndexed:
		ev.Rule = RuleBelow
		return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("Baidu indexed %d pages, below %d", n, c.cfg.MinIndexed), ev)
	default:
		ev.Rule = RuleIndexed
		return check.NewVerdict(baton.OutcomePass, fmt.Sprintf("Baidu indexed %d pages (%s)", n, page.Marker), ev)
	}
}
