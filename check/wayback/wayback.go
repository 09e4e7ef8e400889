package wayback

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/wordlist"
)

// Step is the pipeline step name of this checker.
const Step = "wayback"

// DefaultBaseURL is the Wayback Machine; the CDX API is at
// <base>/cdx/search/cdx and raw snapshots at <base>/web/<ts>id_/<url>.
const DefaultBaseURL = "https://web.archive.org"

// EmptyAnswer policies for a CDX answer with no captures ("[]").
const (
	EmptyReject = "reject" // no history → reject (default)
	EmptyRetry  = "retry"  // treat as a datacenter-IP glitch → retry
)

// Config configures the wayback checker. Zero fields take the defaults
// documented on each field.
type Config struct {
	// BaseURL of the Wayback Machine. Default DefaultBaseURL.
	BaseURL string `json:"baseUrl"`
	// Years of history to look at, ending now. Default 5.
	Years int `json:"years"`
	// MinCaptures: fewer captures (after collapse to one a month) reject. Default 1.
	MinCaptures int `json:"minCaptures"`
	// MinYears: fewer distinct capture years reject. Default 1.
	MinYears int `json:"minYears"`
	// SampleSize is how many snapshots are fetched and scanned. Default 3;
	// negative disables scanning.
	SampleSize int `json:"sampleSize"`
	// PageSize is the CDX limit per page. Default 500.
	PageSize int `json:"pageSize"`
	// MaxPages bounds the CDX pages read; the rest is not counted. Default 10.
	MaxPages int `json:"maxPages"`
	// EmptyAnswer is EmptyReject (default) or EmptyRetry.
	EmptyAnswer string `json:"emptyAnswer"`
	// Timeout bounds one HTTP request. Default 30s.
	Timeout time.Duration `json:"timeout"`
	// MaxSnapshotBytes caps a snapshot read. Default 2 MiB.
	MaxSnapshotBytes int64 `json:"maxSnapshotBytes"`
	// MaxEvidence caps raw text kept in evidence. Default 4 KiB.
	MaxEvidence int `json:"maxEvidence"`
	// UserAgent sent to the Wayback Machine. Default "baton-wayback/1".
	UserAgent string `json:"userAgent"`
}

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimSuffix(c.BaseURL, "/")
	if c.Years <= 0 {
		c.Years = 5
	}
	if c.MinCaptures <= 0 {
		c.MinCaptures = 1
	}
	if c.MinYears <= 0 {
		c.MinYears = 1
	}
	if c.SampleSize == 0 {
		c.SampleSize = 3
	}
	if c.PageSize <= 0 {
		c.PageSize = 500
	}
	if c.MaxPages <= 0 {
		c.MaxPages = 10
	}
	if c.EmptyAnswer == "" {
		c.EmptyAnswer = EmptyReject
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.MaxSnapshotBytes <= 0 {
		c.MaxSnapshotBytes = check.DefaultMaxBody
	}
	if c.MaxEvidence <= 0 {
		c.MaxEvidence = check.DefaultMaxEvidence
	}
	if c.UserAgent == "" {
		c.UserAgent = "baton-wayback/1"
	}
	return c
}

// Validate reports configuration errors.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("wayback: baseUrl %q must be an http(s) URL", c.BaseURL))
	}
	if c.EmptyAnswer != EmptyReject && c.EmptyAnswer != EmptyRetry {
		errs = append(errs, fmt.Errorf("wayback: emptyAnswer must be %q or %q, got %q", EmptyReject, EmptyRetry, c.EmptyAnswer))
	}
	if c.Years > 30 {
		errs = append(errs, fmt.Errorf("wayback: years %d is more than 30", c.Years))
	}
	if c.SampleSize > 20 {
		errs = append(errs, fmt.Errorf("wayback: sampleSize %d is more than 20 (rate limits)", c.SampleSize))
	}
	return errors.Join(errs...)
}

// Checker is the wayback step. It is safe for concurrent use.
type Checker struct {
	cfg   Config
	env   check.Env
	words *wordlist.Store
	fetch check.Fetcher
}

var _ check.Checker = (*Checker)(nil)

// New returns a wayback checker scanning with the lists in words (nil = the
// embedded defaults). It does no I/O.
func New(cfg Config, env check.Env, words *wordlist.Store) (*Checker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	env = env.Defaults()
	return &Checker{cfg: cfg, env: env, words: words, fetch: check.Fetcher{
		Client:      env.HTTP,
		Timeout:     cfg.Timeout,
		MaxBody:     cfg.MaxSnapshotBytes,
		MaxEvidence: cfg.MaxEvidence,
		UserAgent:   cfg.UserAgent,
		Now:         env.Now,
	}}, nil
}

// Step returns "wayback".
func (c *Checker) Step() string { return Step }

// Decision rules recorded in evidence.
const (
	RuleTransient     = "transient"
	RuleSuspiciousCDX = "cdx-empty-body"
	RuleMalformedCDX  = "cdx-malformed"
	RuleNoHistory     = "no-history"
	RuleBlackWord     = "black-word"
	RuleThin          = "below-threshold"
	RuleSignal        = "non-black-signal"
	RuleEnoughHistory = "history-ok"
	RuleInvalidDomain = "invalid-domain"
)

// Evidence is the wayback step's Verdict.Data.
type Evidence struct {
	Domain      string     `json:"domain"`
	Query       string     `json:"query"`
	Rule        string     `json:"rule"`
	Captures    int        `json:"captures"`
	Years       []int      `json:"years,omitempty"`
	First       string     `json:"first,omitempty"`
	Last        string     `json:"last,omitempty"`
	Pages       int        `json:"pages"`
	MorePages   bool       `json:"morePages,omitempty"`
	MinCaptures int        `json:"minCaptures"`
	MinYears    int        `json:"minYears"`
	Sampled     []Snapshot `json:"sampled,omitempty"`
	Black       *WordHit   `json:"black,omitempty"`
	Signals     []WordHit  `json:"signals,omitempty"`
	Raw         string     `json:"raw,omitempty"` // start of the first CDX answer or of the failing answer
}

// Snapshot records one fetched snapshot.
type Snapshot struct {
	Timestamp   string    `json:"timestamp"`
	URL         string    `json:"url"`
	HTTPStatus  int       `json:"httpStatus,omitempty"`
	Charset     string    `json:"charset,omitempty"`
	CharsetFrom string    `json:"charsetFrom,omitempty"`
	Title       string    `json:"title,omitempty"`
	Hits        []WordHit `json:"hits,omitempty"`
	Error       string    `json:"error,omitempty"`
}

// WordHit is a word-list hit in a snapshot.
type WordHit struct {
	Timestamp string `json:"timestamp"`
	URL       string `json:"url"`
	Field     string `json:"field"` // title, keywords, description, body
	Word      string `json:"word"`
	Category  string `json:"category"`
	Black     bool   `json:"black"`
}

// Check runs the wayback step for domain.
func (c *Checker) Check(ctx context.Context, domain string) check.Verdict {
	domain = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
	ev := &Evidence{Domain: domain, MinCaptures: c.cfg.MinCaptures, MinYears: c.cfg.MinYears}
	if domain == "" || strings.ContainsAny(domain, "/?#@ ") {
		ev.Rule = RuleInvalidDomain
		return check.NewVerdict(baton.OutcomeReject, "invalid domain name", ev)
	}
	now := c.env.Now().UTC()
	params := url.Values{
		"url":           {domain},
		"matchType":     {"host"},
		"from":          {now.AddDate(-c.cfg.Years, 0, 0).Format("20060102150405")},
		"to":            {now.Format("20060102150405")},
		"output":        {"json"},
		"fl":            {"timestamp,original,statuscode,mimetype,digest"},
		"filter":        {"statuscode:200", "mimetype:text/html"},
		"collapse":      {"timestamp:6"},
		"limit":         {fmt.Sprint(c.cfg.PageSize)},
		"showResumeKey": {"true"},
	}
	cdx := c.cfg.BaseURL + "/cdx/search/cdx"
	ev.Query = cdx + "?" + params.Encode()

	var caps []Capture
	for resume := ""; ; {
		if ev.Pages == c.cfg.MaxPages {
			ev.MorePages = true
			break
		}
		if resume != "" {
			params.Set("resumeKey", resume)
		}
		resp, err := c.fetch.Get(ctx, cdx+"?"+params.Encode(), nil)
		if err != nil {
			return c.retry(ev, fmt.Errorf("cdx page %d: %w", ev.Pages+1, err))
		}
		if ev.Raw == "" {
			ev.Raw = resp.Evidence()
		}
		if resp.StatusCode != http.StatusOK {
			ev.Raw, ev.Rule = resp.Evidence(), RuleTransient
			return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
				Err: fmt.Errorf("%w: cdx answered HTTP %d", check.ErrSuspiciousAnswer, resp.StatusCode)}, ev)
		}
		page, err := ParseCDX(resp.Body)
		switch {
		case errors.Is(err, ErrEmptyBody):
			ev.Rule = RuleSuspiciousCDX
			return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
				Err: fmt.Errorf("%w: HTTP 200 with an empty body instead of []", check.ErrSuspiciousAnswer)}, ev)
		case err != nil:
			ev.Rule, ev.Raw = RuleMalformedCDX, resp.Evidence()
			return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
				Err: fmt.Errorf("%w: %w", check.ErrSuspiciousAnswer, err)}, ev)
		}
		ev.Pages++
		caps = append(caps, page.Captures...)
		if page.ResumeKey == "" || page.ResumeKey == resume || len(page.Captures) == 0 {
			break
		}
		resume = page.ResumeKey
	}

	ev.Captures = len(caps)
	years := map[int]bool{}
	for _, cp := range caps {
		years[cp.Year()] = true
	}
	for y := range years {
		ev.Years = append(ev.Years, y)
	}
	sort.Ints(ev.Years)
	if len(caps) > 0 {
		sort.SliceStable(caps, func(i, j int) bool { return caps[i].Timestamp < caps[j].Timestamp })
		ev.First, ev.Last = caps[0].Timestamp, caps[len(caps)-1].Timestamp
	}

	if len(caps) == 0 {
		ev.Rule = RuleNoHistory
		if c.cfg.EmptyAnswer == EmptyRetry {
			return check.NewVerdict(baton.OutcomeRetry, "CDX returned no captures (configured to retry)", ev)
		}
		return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("no history: no captures in %d years", c.cfg.Years), ev)
	}

	lists := c.words.Load()
	for _, cp := range Sample(caps, c.cfg.SampleSize) {
		snap, err := c.snapshot(ctx, cp, lists)
		ev.Sampled = append(ev.Sampled, snap)
		if err != nil {
			return c.retry(ev, err)
		}
		for _, h := range snap.Hits {
			if h.Black {
				h := h
				ev.Black, ev.Rule = &h, RuleBlackWord
				return check.NewVerdict(baton.OutcomeBlackHit,
					fmt.Sprintf("black word %q (%s) in snapshot %s of %s", h.Word, h.Category, h.Timestamp, h.URL), ev)
			}
			ev.Signals = append(ev.Signals, h)
		}
	}

	if ev.Captures < c.cfg.MinCaptures || len(ev.Years) < c.cfg.MinYears {
		ev.Rule = RuleThin
		return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("thin history: %d captures in %d distinct years (need %d and %d)",
			ev.Captures, len(ev.Years), c.cfg.MinCaptures, c.cfg.MinYears), ev)
	}
	if len(ev.Signals) > 0 {
		s := ev.Signals[0]
		ev.Rule = RuleSignal
		return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("%s page: %q in snapshot %s", s.Category, s.Word, s.Timestamp), ev)
	}
	ev.Rule = RuleEnoughHistory
	return check.NewVerdict(baton.OutcomePass, fmt.Sprintf("%d captures in %d distinct years", ev.Captures, len(ev.Years)), ev)
}

func (c *Checker) retry(ev *Evidence, err error) check.Verdict {
	ev.Rule = RuleTransient
	var te *check.TransientError
	if errors.As(err, &te) && te.Evidence != "" {
		ev.Raw = te.Evidence
	}
	return check.RetryVerdict(err, ev)
}

// snapshot fetches and scans one capture. A returned error is transient
// (the whole check retries); other failures are recorded in the Snapshot.
func (c *Checker) snapshot(ctx context.Context, cp Capture, lists *wordlist.Lists) (Snapshot, error) {
	u := c.cfg.BaseURL + "/web/" + cp.Timestamp + "id_/" + cp.Original
	snap := Snapshot{Timestamp: cp.Timestamp, URL: cp.Original}
	resp, err := c.fetch.Get(ctx, u, nil)
	if err != nil {
		snap.Error = err.Error()
		return snap, fmt.Errorf("snapshot %s: %w", cp.Timestamp, err)
	}
	snap.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		snap.Error = fmt.Sprintf("HTTP %d", resp.StatusCode)
		return snap, nil
	}
	text, name, from := DecodeHTML(resp.Body, resp.Header.Get("Content-Type"))
	snap.Charset, snap.CharsetFrom = name, from
	page := ExtractPage(text)
	snap.Title = check.TruncateUTF8(page.Title, 256)
	seen := map[wordlist.Hit]bool{}
	for _, f := range []struct{ name, text string }{
		{"title", page.Title}, {"keywords", page.Keywords}, {"description", page.Description}, {"body", page.Body},
	} {
		for _, h := range lists.Match(f.text) {
			if seen[h] {
				continue
			}
			seen[h] = true
			snap.Hits = append(snap.Hits, WordHit{Timestamp: cp.Timestamp, URL: cp.Original, Field: f.name,
				Word: h.Word, Category: h.Category, Black: h.Black})
		}
	}
	// Black hits first so the verdict names one.
	sort.SliceStable(snap.Hits, func(i, j int) bool { return snap.Hits[i].Black && !snap.Hits[j].Black })
	return snap, nil
}

// Sample picks up to n captures spread across years: the years are taken
// newest first and evenly spaced down to the oldest, and within a year the
// latest capture is used; when n exceeds the number of years the remaining
// picks are spread evenly over the other captures. caps must be sorted by
// timestamp. n <= 0 picks none.
func Sample(caps []Capture, n int) []Capture {
	if n <= 0 || len(caps) == 0 {
		return nil
	}
	if n >= len(caps) {
		out := append([]Capture(nil), caps...)
		reverse(out)
		return out
	}
	// Latest capture of each year, newest year first.
	var perYear []int
	for i := len(caps) - 1; i >= 0; i-- {
		if len(perYear) == 0 || caps[perYear[len(perYear)-1]].Year() != caps[i].Year() {
			perYear = append(perYear, i)
		}
	}
	picked := map[int]bool{}
	var out []Capture
	add := func(i int) {
		if !picked[i] {
			picked[i] = true
			out = append(out, caps[i])
		}
	}
	k := min(n, len(perYear))
	for j := 0; j < k; j++ {
		idx := 0
		if k > 1 {
			idx = j * (len(perYear) - 1) / (k - 1)
		}
		add(perYear[idx])
	}
	if rest := n - len(out); rest > 0 {
		var others []int
		for i := len(caps) - 1; i >= 0; i-- {
			if !picked[i] {
				others = append(others, i)
			}
		}
		for j := 0; j < rest && j < len(others); j++ {
			add(others[j*len(others)/rest])
		}
	}
	return out
}

func reverse(c []Capture) {
	for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
		c[i], c[j] = c[j], c[i]
	}
}
