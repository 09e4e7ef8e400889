package httpcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/wordlist"
)

// Decision rules recorded in evidence.
const (
	RuleTransient     = "transient"       // 429 / 5xx / timeout / connection error
	RuleNotConfigured = "not-configured"  // no endpoint: retry + <step>_config alert
	RuleLogin         = "login-page"      // login page / 401 / 403: retry + <step>_auth alert
	RuleCaptcha       = "captcha"         // captcha page: retry
	RuleHTTPStatus    = "http-status"     // another non-2xx answer: retry
	RuleMalformed     = "malformed"       // the answer does not parse as Format: retry
	RuleNotOK         = "provider-status" // OK value not in OKValues: retry
	RuleNotFound      = "not-found"       // a NotFound marker: reject
	RuleBlackWord     = "black-word"      // a title/text hits a black list: black_hit
	RuleFlag          = "flag"            // a RejectFlags flag is set: reject
	RuleSignal        = "non-black-signal"
	RuleYearsMissing  = "years-missing" // Years/FirstYear found nothing: retry + <step>_config alert
	RuleYoung         = "below-min-years"
	RuleOK            = "ok"
	RuleInvalidDomain = "invalid-domain"
)

// Evidence is Verdict.Data of a configurable HTTP check.
type Evidence struct {
	Domain     string            `json:"domain"`
	Rule       string            `json:"rule"`
	Request    string            `json:"request,omitempty"` // METHOD URL, secrets redacted
	HTTPStatus int               `json:"httpStatus,omitempty"`
	FinalURL   string            `json:"finalUrl,omitempty"`
	Message    string            `json:"message,omitempty"`
	Titles     []Title           `json:"titles,omitempty"`
	Texts      map[string]string `json:"texts,omitempty"`
	Years      *int64            `json:"years,omitempty"`
	YearsFrom  string            `json:"yearsFrom,omitempty"` // the extractor that gave Years
	MinYears   int               `json:"minYears"`
	Flags      map[string]string `json:"flags,omitempty"` // raw values of the configured flags
	SetFlags   []string          `json:"setFlags,omitempty"`
	Black      *WordHit          `json:"black,omitempty"`
	Signals    []WordHit         `json:"signals,omitempty"`
	Marker     string            `json:"marker,omitempty"` // the captcha/login/not-found pattern that matched
	Alert      *check.Alert      `json:"alert,omitempty"`
	Simulated  bool              `json:"simulated,omitempty"`
	Raw        string            `json:"raw,omitempty"`
}

// Title is one history title.
type Title struct {
	Title     string `json:"title"`
	Timestamp string `json:"timestamp,omitempty"`
}

// WordHit is a word-list hit in a title or text field.
type WordHit struct {
	Field     string `json:"field"` // "title" or the Texts name
	Text      string `json:"text"`
	Timestamp string `json:"timestamp,omitempty"`
	Word      string `json:"word"`
	Category  string `json:"category"`
	Black     bool   `json:"black"`
}

// Checker is a configurable HTTP check. It is safe for concurrent use.
type Checker struct {
	step  string
	cfg   Config
	cp    *compiled
	env   check.Env
	words *wordlist.Store
	fetch check.Fetcher
}

var _ check.Checker = (*Checker)(nil)

// New returns a checker for step from a merged Config (see Config.Merge),
// scanning with words (nil = the embedded default lists). It does no I/O.
func New(step string, cfg Config, env check.Env, words *wordlist.Store) (*Checker, error) {
	cfg = cfg.withDefaults()
	cp, err := cfg.compile()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	env = env.Defaults()
	c := &Checker{step: step, cfg: cfg, cp: cp, env: env, words: words}
	c.fetch = check.Fetcher{
		Client: env.HTTP, Timeout: cfg.Timeout, MaxBody: cfg.MaxBody, MaxEvidence: cfg.MaxEvidence,
		UserAgent: cfg.UserAgent, Now: env.Now, Redact: c.redact,
	}
	return c, nil
}

// Step returns the step name given to New.
func (c *Checker) Step() string { return c.step }

// Config returns the effective configuration (secrets stay check.Secret).
func (c *Checker) Config() Config { return c.cfg }

func (c *Checker) redact(s string) string {
	return check.Redact(s, c.cfg.Secret.Reveal(), c.cfg.Cookie.Reveal())
}

// ValidDomain reports whether d looks like a normalized domain name
// (lower-case letters, digits, '-', '.'), the only input a template sees.
func ValidDomain(d string) bool {
	if d == "" || len(d) > 253 || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") || strings.Contains(d, "..") {
		return false
	}
	for i := 0; i < len(d); i++ {
		b := d[i]
		if !(b == '-' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z') {
			return false
		}
	}
	return true
}

func expand(tmpl, domain, secret string, esc func(string) string) string {
	return strings.NewReplacer(PlaceholderDomain, esc(domain), PlaceholderSecret, esc(secret)).Replace(tmpl)
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func noEscape(s string) string { return s }

// request builds the HTTP request for domain.
func (c *Checker) request(ctx context.Context, domain string) (*http.Request, error) {
	secret := c.cfg.Secret.Reveal()
	u, err := url.Parse(expand(c.cfg.Endpoint, domain, secret, url.PathEscape))
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	if len(c.cfg.Query) > 0 {
		q := u.Query()
		keys := make([]string, 0, len(c.cfg.Query))
		for k := range c.cfg.Query {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			q.Set(k, expand(c.cfg.Query[k], domain, secret, noEscape))
		}
		u.RawQuery = q.Encode()
	}
	var body *strings.Reader
	ctype := ""
	if c.cfg.Body != "" {
		switch c.cfg.BodyType {
		case BodyJSON:
			body, ctype = strings.NewReader(expand(c.cfg.Body, domain, secret, jsonEscape)), "application/json"
		default:
			body, ctype = strings.NewReader(expand(c.cfg.Body, domain, secret, url.QueryEscape)), "application/x-www-form-urlencoded"
		}
	}
	var req *http.Request
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, c.cfg.Method, u.String(), body)
	} else {
		req, err = http.NewRequestWithContext(ctx, c.cfg.Method, u.String(), nil)
	}
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.5")
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, expand(v, domain, secret, noEscape))
	}
	if ck := c.cfg.Cookie.Reveal(); ck != "" {
		req.Header.Set("Cookie", ck)
	}
	return req, nil
}

func (c *Checker) alert(kind, msg string) *check.Alert {
	return &check.Alert{Code: c.step + "_" + kind, Message: msg}
}

// alertVerdict is a retry that carries ev.Alert, delayed by AlertDelay.
func (c *Checker) alertVerdict(reason string, ev *Evidence) check.Verdict {
	v := check.NewVerdict(baton.OutcomeRetry, reason, ev)
	v.RetryAfter = c.cfg.AlertDelay
	return v
}

// Check runs the step for domain.
func (c *Checker) Check(ctx context.Context, domain string) check.Verdict {
	domain = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
	ev := &Evidence{Domain: domain, MinYears: c.cfg.MinYears}
	if !ValidDomain(domain) {
		ev.Rule = RuleInvalidDomain
		return check.NewVerdict(baton.OutcomeReject, "invalid domain name", ev)
	}
	if c.cfg.Endpoint == "" {
		ev.Rule = RuleNotConfigured
		ev.Alert = c.alert("config", fmt.Sprintf("the %s step has no endpoint: set its endpoint, credentials and extraction paths (no public API exists)", c.step))
		return c.alertVerdict(c.step+" is not configured", ev)
	}
	req, err := c.request(ctx, domain)
	if err != nil {
		ev.Rule = RuleNotConfigured
		ev.Alert = c.alert("config", "the request template does not build a valid request: "+c.redact(err.Error()))
		return c.alertVerdict(c.redact(err.Error()), ev)
	}
	ev.Request = req.Method + " " + c.redact(req.URL.String())
	resp, err := c.fetch.Do(req)
	if err != nil {
		ev.Rule = RuleTransient
		var te *check.TransientError
		if errors.As(err, &te) {
			ev.HTTPStatus, ev.Raw = te.StatusCode, c.redact(te.Evidence)
		}
		return check.RetryVerdict(err, ev)
	}
	ev.HTTPStatus, ev.FinalURL = resp.StatusCode, resp.URL
	ev.Raw = c.redact(resp.Evidence())
	body := string(resp.Body)

	// Login before captcha: a login page needs the operator, a captcha only time.
	if m := firstMatch(c.cp.loginURL, resp.URL); m != "" || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return c.loginVerdict(ev, m, resp.URL)
	}
	if m := firstMatch(c.cp.login, body); m != "" {
		return c.loginVerdict(ev, m, resp.URL)
	}
	if m := firstMatch(c.cp.captcha, body); m != "" {
		ev.Rule, ev.Marker = RuleCaptcha, m
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w (marker %q)", check.ErrCaptcha, m)}, ev)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ev.Rule = RuleHTTPStatus
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: HTTP %d", check.ErrSuspiciousAnswer, resp.StatusCode)}, ev)
	}
	doc, err := ParseDocument(resp.Body, c.cfg.Format)
	if err != nil {
		ev.Rule = RuleMalformed
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: %w", check.ErrSuspiciousAnswer, err)}, ev)
	}
	if c.cfg.Format == FormatJSON {
		if v, ok := topLevelBool(doc, "simulated"); ok {
			ev.Simulated = v
		}
	}
	if msg, ok := c.cp.message.First(doc); ok {
		ev.Message = check.TruncateUTF8(msg, 512)
	}
	if c.cp.ok != nil {
		v, _ := c.cp.ok.First(doc)
		if !slices.Contains(c.cfg.OKValues, v) {
			ev.Rule = RuleNotOK
			return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
				Err: fmt.Errorf("%w: %s = %q (want one of %q): %s", check.ErrSuspiciousAnswer, c.cp.ok, v, c.cfg.OKValues, ev.Message)}, ev)
		}
	}
	if m := firstMatch(c.cp.notFound, body); m != "" {
		ev.Rule, ev.Marker = RuleNotFound, m
		return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("%s knows nothing about %s (marker %q)", c.step, domain, m), ev)
	}
	return c.decide(doc, ev)
}

// topLevelBool reads a boolean at a top-level JSON key of doc, if present.
func topLevelBool(doc *Document, key string) (bool, bool) {
	m, ok := doc.JSON.(map[string]any)
	if !ok {
		return false, false
	}
	b, ok := m[key].(bool)
	return b, ok
}

func (c *Checker) loginVerdict(ev *Evidence, marker, finalURL string) check.Verdict {
	ev.Rule, ev.Marker = RuleLogin, marker
	ev.Alert = c.alert("auth", fmt.Sprintf("the %s answer is a login page (HTTP %d, %s): renew the session cookie / credentials in the %s step configuration", c.step, ev.HTTPStatus, finalURL, c.step))
	return c.alertVerdict(fmt.Sprintf("%s: not logged in (login page)", c.step), ev)
}

func firstMatch(res []*regexp.Regexp, s string) string {
	for _, re := range res {
		if re.MatchString(s) {
			return re.String()
		}
	}
	return ""
}

// Extracted is what a Config pulls out of one answer.
type Extracted struct {
	Titles    []Title           `json:"titles,omitempty"`
	Texts     map[string]string `json:"texts,omitempty"`
	Years     *int64            `json:"years,omitempty"`
	YearsFrom string            `json:"yearsFrom,omitempty"`
	Flags     map[string]string `json:"flags,omitempty"`
	Message   string            `json:"message,omitempty"`
	OK        string            `json:"ok,omitempty"`
}

// MaxTitles bounds the titles kept and scanned per answer.
const MaxTitles = 200

// Extract applies the configured extractors to doc; thisYear turns a
// first-seen year into an age.
func (c *Checker) Extract(doc *Document, thisYear int) Extracted {
	var x Extracted
	titles, times := c.titlesAndTimes(doc)
	for i, t := range titles {
		if i == MaxTitles {
			break
		}
		tt := Title{Title: check.TruncateUTF8(strings.TrimSpace(t), 512)}
		if i < len(times) {
			tt.Timestamp = check.TruncateUTF8(times[i], 64)
		}
		x.Titles = append(x.Titles, tt)
	}
	for name, cp := range c.cp.texts {
		if vs := cp.All(doc); len(vs) > 0 {
			if x.Texts == nil {
				x.Texts = map[string]string{}
			}
			x.Texts[name] = check.TruncateUTF8(strings.Join(vs, " "), 2048)
		}
	}
	if v, ok := c.cp.years.First(doc); ok {
		if n, ok := Int(v); ok {
			x.Years, x.YearsFrom = &n, c.cp.years.String()
		}
	}
	if x.Years == nil {
		if v, ok := c.cp.firstYear.First(doc); ok {
			if y, ok := Int(v); ok && y > 1900 && y <= int64(thisYear)+1 {
				n := max(int64(thisYear)-y+1, 0)
				x.Years, x.YearsFrom = &n, c.cp.firstYear.String()
			}
		}
	}
	for name, cp := range c.cp.flags {
		v, ok := cp.First(doc)
		if !ok {
			continue
		}
		if x.Flags == nil {
			x.Flags = map[string]string{}
		}
		x.Flags[name] = check.TruncateUTF8(v, 256)
	}
	x.Message, _ = c.cp.message.First(doc)
	x.OK, _ = c.cp.ok.First(doc)
	return x
}

// titlesAndTimes extracts titles and their timestamps. When both are JSON
// paths through the same list ("data.history[*].bt" / "data.history[*].ts")
// they are read item by item, so an item without a timestamp does not shift
// the others; otherwise the two lists are paired by position.
func (c *Checker) titlesAndTimes(doc *Document) (titles, times []string) {
	tp, sp := c.cp.titles.jsonPath(), c.cp.titleTimes.jsonPath()
	if tp != nil && sp != nil {
		tPre, tSuf, ok1 := tp.splitLastWild()
		sPre, sSuf, ok2 := sp.splitLastWild()
		if ok1 && ok2 && tPre.equal(sPre) {
			for _, item := range tPre.Eval(doc.JSON) {
				v, ok := tSuf.First(item)
				t, tok := Text(v)
				if !ok || !tok {
					continue
				}
				ts := ""
				if w, ok := sSuf.First(item); ok {
					ts, _ = Text(w)
				}
				titles, times = append(titles, t), append(times, ts)
				if len(titles) == MaxValues {
					break
				}
			}
			return titles, times
		}
	}
	return c.cp.titles.All(doc), c.cp.titleTimes.All(doc)
}

func (c *Checker) decide(doc *Document, ev *Evidence) check.Verdict {
	x := c.Extract(doc, c.env.Now().Year())
	ev.Titles, ev.Texts, ev.Years, ev.YearsFrom, ev.Flags = x.Titles, x.Texts, x.Years, x.YearsFrom, x.Flags

	lists := c.words.Load()
	seen := map[wordlist.Hit]bool{}
	scan := func(field, text, ts string) {
		for _, h := range lists.Match(text) {
			if seen[h] {
				continue
			}
			seen[h] = true
			wh := WordHit{Field: field, Text: check.TruncateUTF8(text, 256), Timestamp: ts, Word: h.Word, Category: h.Category, Black: h.Black}
			if h.Black && ev.Black == nil {
				ev.Black = &wh
			} else if !h.Black {
				ev.Signals = append(ev.Signals, wh)
			}
		}
	}
	for _, t := range x.Titles {
		scan("title", t.Title, t.Timestamp)
	}
	names := make([]string, 0, len(x.Texts))
	for n := range x.Texts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		scan(n, x.Texts[n], "")
	}
	if b := ev.Black; b != nil {
		ev.Rule = RuleBlackWord
		when := ""
		if b.Timestamp != "" {
			when = " at " + b.Timestamp
		}
		return check.NewVerdict(baton.OutcomeBlackHit, fmt.Sprintf("black word %q (%s) in %s %q%s", b.Word, b.Category, b.Field, b.Text, when), ev)
	}
	flagNames := make([]string, 0, len(x.Flags))
	for n := range x.Flags {
		flagNames = append(flagNames, n)
	}
	sort.Strings(flagNames)
	for _, n := range flagNames {
		if !c.cfg.isFalse(x.Flags[n]) {
			ev.SetFlags = append(ev.SetFlags, n)
		}
	}
	for _, n := range ev.SetFlags {
		if slices.Contains(c.cfg.RejectFlags, n) {
			ev.Rule = RuleFlag
			return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("flag %s is set (%q)", n, x.Flags[n]), ev)
		}
	}
	if len(ev.Signals) > 0 {
		s := ev.Signals[0]
		ev.Rule = RuleSignal
		return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("%s signal %q in %s %q", s.Category, s.Word, s.Field, s.Text), ev)
	}
	if c.cfg.MinYears > 0 {
		if x.Years == nil {
			if c.cp.years == nil && c.cp.firstYear == nil {
				ev.Rule = RuleYearsMissing
				ev.Alert = c.alert("config", fmt.Sprintf("minYears is %d but neither years nor firstYear is configured for %s", c.cfg.MinYears, c.step))
				return c.alertVerdict("site age extractor not configured", ev)
			}
			ev.Rule = RuleYearsMissing
			ev.Alert = c.alert("config", fmt.Sprintf("%s answered but the site-age extractors (%s, %s) found nothing: fix the extraction paths", c.step, c.cp.years, c.cp.firstYear))
			return c.alertVerdict("site age not found in the answer", ev)
		}
		if *x.Years < int64(c.cfg.MinYears) {
			ev.Rule = RuleYoung
			return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("site age %d years is below %d", *x.Years, c.cfg.MinYears), ev)
		}
	}
	ev.Rule = RuleOK
	reason := fmt.Sprintf("%d titles clean", len(x.Titles))
	if x.Years != nil {
		reason += fmt.Sprintf(", site age %d years", *x.Years)
	}
	return check.NewVerdict(baton.OutcomePass, reason, ev)
}
