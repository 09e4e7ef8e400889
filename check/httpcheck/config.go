package httpcheck

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/check"
)

// Body types of a POST request.
const (
	BodyForm = "form" // application/x-www-form-urlencoded
	BodyJSON = "json" // application/json
)

// Template placeholders. {{domain}} is the domain being checked and
// {{secret}} is Config.Secret; each is escaped for where it appears (path,
// query, form, JSON string).
const (
	PlaceholderDomain = "{{domain}}"
	PlaceholderSecret = "{{secret}}"
)

// Config describes how to ask a provider about one domain and how to read
// its answer, so an operator can wire up a provider with no public API
// without code. Zero fields take the provider package's defaults (see
// Merge); nil maps and slices take the default, an empty non-nil one
// disables it.
type Config struct {
	// Endpoint is the URL to call; it may contain {{domain}} and {{secret}}.
	// Empty means "not configured": every check retries with an operator
	// alert "<step>_config".
	Endpoint string `json:"endpoint"`
	// Method is GET or POST. Default GET.
	Method string `json:"method"`
	// Query parameters added to Endpoint; values may use the placeholders.
	Query map[string]string `json:"query"`
	// Headers sent with the request; values may use the placeholders
	// (e.g. "Authorization": "Bearer {{secret}}").
	Headers map[string]string `json:"headers"`
	// Secret is the token {{secret}} expands to. Never logged or kept in evidence.
	Secret check.Secret `json:"secret"`
	// Cookie is sent verbatim as the Cookie header (e.g. "session=abc"). A
	// secret: never logged or kept in evidence.
	Cookie check.Secret `json:"cookie"`
	// Body is the POST body template, e.g. "domain={{domain}}" (BodyForm) or
	// {"domain":"{{domain}}"} (BodyJSON). Empty sends no body.
	Body string `json:"body"`
	// BodyType is BodyForm or BodyJSON; it sets the Content-Type and how the
	// placeholders are escaped. Default BodyForm.
	BodyType string `json:"bodyType"`
	// Format of the answer: FormatJSON or FormatHTML.
	Format string `json:"format"`

	// OK, for JSON answers, is where a status code sits; when set, an answer
	// whose value is not one of OKValues is not evidence (retry, with the
	// Message value as the reason).
	OK Extractor `json:"ok"`
	// OKValues are the values of OK that mean success.
	OKValues []string `json:"okValues"`
	// Message is where the provider's message sits (kept in evidence).
	Message Extractor `json:"message"`

	// Titles extracts the history titles (a list) scanned with the word lists.
	Titles Extractor `json:"titles"`
	// TitleTimes extracts a timestamp per title, in the same order (optional).
	TitleTimes Extractor `json:"titleTimes"`
	// Texts are more named fields scanned with the word lists (e.g. a
	// "grey words" column).
	Texts map[string]Extractor `json:"texts"`
	// Years extracts the site age in years (建站年数).
	Years Extractor `json:"years"`
	// FirstYear extracts the first-seen year; age = this year - FirstYear + 1.
	// Used when Years is not configured or finds nothing.
	FirstYear Extractor `json:"firstYear"`
	// Flags extract named yes/no facts (e.g. "blocked" for 被墙). A flag is
	// set when its value is non-empty and not one of FalseValues.
	Flags map[string]Extractor `json:"flags"`
	// FalseValues are the flag values that mean "no". Default
	// DefaultFalseValues; compared case-insensitively after trimming.
	FalseValues []string `json:"falseValues"`
	// RejectFlags are the flags that reject a domain. Default ["blocked"].
	RejectFlags []string `json:"rejectFlags"`
	// NotFound are regexps that, found in the answer, mean the provider
	// knows nothing about the domain: reject (rule "not-found").
	NotFound []string `json:"notFound"`
	// Captcha are regexps that, found in the answer, mean a captcha or
	// anti-bot page: retry.
	Captcha []string `json:"captcha"`
	// Login are regexps that, found in the answer, mean the session is not
	// logged in: retry with an operator alert "<step>_auth".
	Login []string `json:"login"`
	// LoginURL are regexps that, matching the final URL after redirects,
	// mean a login page: retry with an alert "<step>_auth".
	LoginURL []string `json:"loginUrl"`

	// MinYears: a site age below it rejects. Default 1; negative disables
	// the rule (then Years/FirstYear may stay unconfigured).
	MinYears int `json:"minYears"`
	// AlertDelay is the retry delay of a verdict carrying an operator alert
	// (the operator needs time to fix it). Default 5m.
	AlertDelay time.Duration `json:"alertDelay"`
	// Timeout bounds one request. Default 15s.
	Timeout time.Duration `json:"timeout"`
	// MaxBody caps the answer read. Default 2 MiB.
	MaxBody int64 `json:"maxBody"`
	// MaxEvidence caps the raw answer kept in evidence. Default 4 KiB.
	MaxEvidence int `json:"maxEvidence"`
	// UserAgent sent with the request. Default a desktop browser's.
	UserAgent string `json:"userAgent"`
}

// DefaultFalseValues are the flag values read as "no".
var DefaultFalseValues = []string{"", "否", "无", "未", "没有", "no", "n", "false", "0", "none", "-", "正常"}

// DefaultUserAgent is a desktop browser's User-Agent.
const DefaultUserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"

// Merge returns c with every zero field taken from d (the provider's
// defaults), then the generic defaults applied.
func (c Config) Merge(d Config) Config {
	if c.Endpoint == "" {
		c.Endpoint = d.Endpoint
	}
	if c.Method == "" {
		c.Method = d.Method
	}
	if c.Query == nil {
		c.Query = d.Query
	}
	if c.Headers == nil {
		c.Headers = d.Headers
	}
	if c.Secret == "" {
		c.Secret = d.Secret
	}
	if c.Cookie == "" {
		c.Cookie = d.Cookie
	}
	if c.Body == "" {
		c.Body = d.Body
	}
	if c.BodyType == "" {
		c.BodyType = d.BodyType
	}
	if c.Format == "" {
		c.Format = d.Format
	}
	for _, p := range []struct{ dst, src *Extractor }{
		{&c.OK, &d.OK}, {&c.Message, &d.Message}, {&c.Titles, &d.Titles}, {&c.TitleTimes, &d.TitleTimes},
		{&c.Years, &d.Years}, {&c.FirstYear, &d.FirstYear},
	} {
		if p.dst.IsZero() {
			*p.dst = *p.src
		}
	}
	if c.OKValues == nil {
		c.OKValues = d.OKValues
	}
	if c.Texts == nil {
		c.Texts = d.Texts
	}
	if c.Flags == nil {
		c.Flags = d.Flags
	}
	if c.FalseValues == nil {
		c.FalseValues = d.FalseValues
	}
	if c.RejectFlags == nil {
		c.RejectFlags = d.RejectFlags
	}
	if c.NotFound == nil {
		c.NotFound = d.NotFound
	}
	if c.Captcha == nil {
		c.Captcha = d.Captcha
	}
	if c.Login == nil {
		c.Login = d.Login
	}
	if c.LoginURL == nil {
		c.LoginURL = d.LoginURL
	}
	if c.MinYears == 0 {
		c.MinYears = d.MinYears
	}
	if c.AlertDelay == 0 {
		c.AlertDelay = d.AlertDelay
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.MaxBody == 0 {
		c.MaxBody = d.MaxBody
	}
	if c.MaxEvidence == 0 {
		c.MaxEvidence = d.MaxEvidence
	}
	if c.UserAgent == "" {
		c.UserAgent = d.UserAgent
	}
	return c.withDefaults()
}

func (c Config) withDefaults() Config {
	if c.Method == "" {
		c.Method = http.MethodGet
	}
	c.Method = strings.ToUpper(c.Method)
	if c.BodyType == "" {
		c.BodyType = BodyForm
	}
	if c.Format == "" {
		c.Format = FormatJSON
	}
	if c.FalseValues == nil {
		c.FalseValues = DefaultFalseValues
	}
	if c.RejectFlags == nil {
		c.RejectFlags = []string{"blocked"}
	}
	if c.MinYears == 0 {
		c.MinYears = 1
	}
	if c.AlertDelay <= 0 {
		c.AlertDelay = 5 * time.Minute
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
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return c
}

// compiled is a validated Config.
type compiled struct {
	ok, message, titles, titleTimes, years, firstYear *Compiled
	texts, flags                                      map[string]*Compiled
	notFound, captcha, login, loginURL                []*regexp.Regexp
}

// Validate reports configuration errors.
func (c Config) Validate() error {
	_, err := c.withDefaults().compile()
	return err
}

func (c Config) compile() (*compiled, error) {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.Endpoint != "" {
		probe := strings.NewReplacer(PlaceholderDomain, "example.com", PlaceholderSecret, "x").Replace(c.Endpoint)
		if u, err := url.Parse(probe); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(fmt.Errorf("endpoint %q must be an http(s) URL", c.Endpoint))
		}
	}
	if c.Method != http.MethodGet && c.Method != http.MethodPost {
		add(fmt.Errorf("method must be GET or POST, got %q", c.Method))
	}
	if c.BodyType != BodyForm && c.BodyType != BodyJSON {
		add(fmt.Errorf("bodyType must be %q or %q, got %q", BodyForm, BodyJSON, c.BodyType))
	}
	if c.Body != "" && c.Method != http.MethodPost {
		add(errors.New("body needs method POST"))
	}
	if c.Format != FormatJSON && c.Format != FormatHTML {
		add(fmt.Errorf("format must be %q or %q, got %q", FormatJSON, FormatHTML, c.Format))
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			add(fmt.Errorf("header name %q is invalid", k))
		}
	}
	var out compiled
	one := func(name string, e Extractor) *Compiled {
		cp, err := e.Compile(c.Format)
		if err != nil {
			add(fmt.Errorf("%s: %w", name, err))
		}
		return cp
	}
	out.ok = one("ok", c.OK)
	out.message = one("message", c.Message)
	out.titles = one("titles", c.Titles)
	out.titleTimes = one("titleTimes", c.TitleTimes)
	out.years = one("years", c.Years)
	out.firstYear = one("firstYear", c.FirstYear)
	if out.ok != nil && len(c.OKValues) == 0 {
		add(errors.New("ok is set but okValues is empty"))
	}
	out.texts = map[string]*Compiled{}
	for name, e := range c.Texts {
		if cp := one("texts."+name, e); cp != nil {
			out.texts[name] = cp
		}
	}
	out.flags = map[string]*Compiled{}
	for name, e := range c.Flags {
		if cp := one("flags."+name, e); cp != nil {
			out.flags[name] = cp
		}
	}
	for _, f := range c.RejectFlags {
		if _, ok := c.Flags[f]; !ok && len(c.Flags) > 0 {
			add(fmt.Errorf("rejectFlags names %q, which is not in flags", f))
		}
	}
	res := func(name string, pats []string) []*regexp.Regexp {
		var out []*regexp.Regexp
		for _, p := range pats {
			re, err := regexp.Compile(p)
			if err != nil {
				add(fmt.Errorf("%s %q: %w", name, p, err))
				continue
			}
			out = append(out, re)
		}
		return out
	}
	out.notFound = res("notFound", c.NotFound)
	out.captcha = res("captcha", c.Captcha)
	out.login = res("login", c.Login)
	out.loginURL = res("loginUrl", c.LoginURL)
	if c.MinYears > 200 {
		add(fmt.Errorf("minYears %d is more than 200", c.MinYears))
	}
	if c.MaxEvidence > 1<<20 {
		add(fmt.Errorf("maxEvidence %d is more than 1 MiB", c.MaxEvidence))
	}
	return &out, errors.Join(errs...)
}

func (c Config) isFalse(v string) bool {
	v = strings.TrimSpace(v)
	return slices.ContainsFunc(c.FalseValues, func(f string) bool { return strings.EqualFold(strings.TrimSpace(f), v) })
}
