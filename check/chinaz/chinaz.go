package chinaz

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/httpcheck"
)

// Step is the pipeline step name of this checker.
const Step = "chinaz"

// DefaultBaseURL is the chinaz data API; requests go to
// <base>/single/<API>?key=KEY&domain=<domain>.
const DefaultBaseURL = "https://apidatav2.chinaz.com"

// DefaultWeightPaths are where the weight is read when Config.WeightPaths
// is nil. GUESS: they are the sandbox's INVENTED field names; the real
// chinaz field names are unknown (providers.md).
var DefaultWeightPaths = []string{"Result.BaiduPcWeight", "Result.BaiduMobileWeight"}

// AlertCode is the code of the operator alert this step raises.
const AlertCode = "chinaz_config"

// Config configures the chinaz checker. Zero fields take the defaults
// documented on each field.
type Config struct {
	// BaseURL of the API. Default DefaultBaseURL.
	BaseURL string `json:"baseUrl"`
	// API is the path segment after /single/ naming the weight endpoint.
	// UNKNOWN for the real service (providers.md): no default. While it is
	// empty every check retries with an operator alert "chinaz_config".
	API string `json:"api"`
	// Key is the API key. While it is empty every check retries with an
	// operator alert "chinaz_config".
	Key check.Secret `json:"key"`
	// WeightPaths are httpcheck.Path expressions into the whole decoded
	// answer; the weight is the largest integer found at any of them.
	// Default DefaultWeightPaths (a guess; see there).
	WeightPaths []string `json:"weightPaths"`
	// MinWeight: a weight at or above it passes, below rejects. Default 1.
	MinWeight int64 `json:"minWeight"`
	// RateLimitedDelay is the retry delay for 531 / 429 without Retry-After. Default 1m.
	RateLimitedDelay time.Duration `json:"rateLimitedDelay"`
	// QuotaDelay is the retry delay for 436 (quota used up) without Retry-After. Default 1h.
	QuotaDelay time.Duration `json:"quotaDelay"`
	// AlertDelay is the retry delay of a verdict carrying an operator alert
	// (the operator needs time to fix the configuration). Default 5m.
	AlertDelay time.Duration `json:"alertDelay"`
	// Timeout bounds one request. Default 15s.
	Timeout time.Duration `json:"timeout"`
	// MaxEvidence caps the raw answer kept in evidence. Default 4 KiB.
	MaxEvidence int `json:"maxEvidence"`
	// UserAgent sent to the API. Default "baton-chinaz/1".
	UserAgent string `json:"userAgent"`
}

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimSuffix(c.BaseURL, "/")
	c.API = strings.Trim(c.API, "/")
	if c.WeightPaths == nil {
		c.WeightPaths = DefaultWeightPaths
	}
	if c.MinWeight <= 0 {
		c.MinWeight = 1
	}
	if c.RateLimitedDelay <= 0 {
		c.RateLimitedDelay = time.Minute
	}
	if c.QuotaDelay <= 0 {
		c.QuotaDelay = time.Hour
	}
	if c.AlertDelay <= 0 {
		c.AlertDelay = 5 * time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = check.DefaultTimeout
	}
	if c.MaxEvidence <= 0 {
		c.MaxEvidence = check.DefaultMaxEvidence
	}
	if c.UserAgent == "" {
		c.UserAgent = "baton-chinaz/1"
	}
	return c
}

// Validate reports configuration errors.
func (c Config) Validate() error {
	_, err := c.withDefaults().paths()
	return err
}

func (c Config) paths() ([]httpcheck.Path, error) {
	var errs []error
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("chinaz: baseUrl %q must be an http(s) URL", c.BaseURL))
	}
	if strings.ContainsAny(c.API, "?#/ ") {
		errs = append(errs, fmt.Errorf("chinaz: api %q must be one path segment", c.API))
	}
	if len(c.WeightPaths) == 0 {
		errs = append(errs, errors.New("chinaz: weightPaths is empty"))
	}
	var ps []httpcheck.Path
	for _, s := range c.WeightPaths {
		p, err := httpcheck.ParsePath(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("chinaz: weightPaths: %w", err))
			continue
		}
		ps = append(ps, p)
	}
	if c.MaxEvidence > 1<<20 {
		errs = append(errs, fmt.Errorf("chinaz: maxEvidence %d is more than 1 MiB", c.MaxEvidence))
	}
	return ps, errors.Join(errs...)
}

// Checker is the chinaz step. It is safe for concurrent use.
type Checker struct {
	cfg   Config
	paths []httpcheck.Path
	env   check.Env
	fetch check.Fetcher
}

var _ check.Checker = (*Checker)(nil)

// New returns a chinaz checker. It does no I/O; a missing API or Key is
// reported per check (retry + alert), not here, so the program can start
// with the step unconfigured.
func New(cfg Config, env check.Env) (*Checker, error) {
	cfg = cfg.withDefaults()
	ps, err := cfg.paths()
	if err != nil {
		return nil, err
	}
	env = env.Defaults()
	c := &Checker{cfg: cfg, paths: ps, env: env}
	c.fetch = check.Fetcher{Client: env.HTTP, Timeout: cfg.Timeout, MaxEvidence: cfg.MaxEvidence,
		RateLimitedDelay: cfg.RateLimitedDelay, UserAgent: cfg.UserAgent, Now: env.Now, Redact: c.redact}
	return c, nil
}

// Step returns "chinaz".
func (c *Checker) Step() string { return Step }

func (c *Checker) redact(s string) string { return check.Redact(s, c.cfg.Key.Reveal()) }

// Decision rules recorded in evidence.
const (
	RuleNotConfigured = "not-configured" // no key or api: retry + alert
	RuleConfig        = "config-error"   // 431 / 433 / 437 / 404: retry + alert
	RuleQuota         = "quota"          // 436: retry
	RuleRateLimited   = "rate-limited"   // 429 / 531: retry
	RuleTransient     = "transient"      // 5xx / 532 / timeout / connection error: retry
	RuleHTTPStatus    = "http-status"    // another non-200 status: retry
	RuleMalformed     = "malformed"      // not the {StateCode,Reason,Result} envelope: retry
	RuleState         = "state-code"     // StateCode ≠ 1: retry with the Reason
	RuleNoWeight      = "weight-missing" // no WeightPaths value: retry + alert
	RuleBelow         = "below-min-weight"
	RuleWeight        = "weight-ok"
	RuleInvalidDomain = "invalid-domain"
)

// Evidence is the chinaz step's Verdict.Data.
type Evidence struct {
	Domain     string           `json:"domain"`
	Request    string           `json:"request,omitempty"` // key redacted
	Rule       string           `json:"rule"`
	HTTPStatus int              `json:"httpStatus,omitempty"`
	StateCode  *int64           `json:"stateCode,omitempty"`
	Reason     string           `json:"reason,omitempty"`
	Weights    map[string]int64 `json:"weights,omitempty"` // path → value found
	Weight     *int64           `json:"weight,omitempty"`
	MinWeight  int64            `json:"minWeight"`
	Alert      *check.Alert     `json:"alert,omitempty"`
	Raw        string           `json:"raw,omitempty"`
}

// Envelope is the chinaz answer envelope (real, from the ICP API).
type Envelope struct {
	// StateCode is 1 on success.
	StateCode *int64 `json:"stateCode,omitempty"`
	// Reason is the provider's message ("成功").
	Reason string `json:"reason,omitempty"`
	// Doc is the whole decoded answer (WeightPaths apply to it).
	Doc any `json:"-"`
}

// ErrEnvelope is returned by ParseEnvelope for an answer without StateCode.
var ErrEnvelope = errors.New("chinaz: not a {StateCode,Reason,Result} answer")

// ParseEnvelope decodes an answer and reads StateCode (a number or a
// numeric string) and Reason.
func ParseEnvelope(body []byte) (Envelope, error) {
	var e Envelope
	doc, err := httpcheck.DecodeJSON(body)
	if err != nil {
		return e, fmt.Errorf("%w: %w", ErrEnvelope, err)
	}
	e.Doc = doc
	m, ok := doc.(map[string]any)
	if !ok {
		return e, fmt.Errorf("%w: not an object", ErrEnvelope)
	}
	if r, ok := httpcheck.Text(m["Reason"]); ok {
		e.Reason = check.TruncateUTF8(r, 512)
	}
	sc, ok := m["StateCode"]
	if !ok {
		return e, fmt.Errorf("%w: no StateCode", ErrEnvelope)
	}
	n, ok := httpcheck.Int(sc)
	if !ok {
		return e, fmt.Errorf("%w: StateCode %v is not a number", ErrEnvelope, sc)
	}
	e.StateCode = &n
	return e, nil
}

// Weight reads the largest integer at any of paths in doc; found maps each
// path that gave a value to it.
func Weight(doc any, paths []httpcheck.Path) (weight int64, found map[string]int64) {
	for _, p := range paths {
		for _, v := range p.Eval(doc) {
			n, ok := httpcheck.Int(v)
			if !ok {
				continue
			}
			if found == nil {
				found = map[string]int64{}
				weight = n
			}
			if old, seen := found[p.String()]; !seen || n > old {
				found[p.String()] = n
			}
			weight = max(weight, n)
		}
	}
	return weight, found
}

// configProblems maps the codes that need the operator to what to fix.
var configProblems = map[int64]string{
	431: "the chinaz API key is missing: set chinaz.key",
	433: "the chinaz API key is wrong: check chinaz.key",
	437: "this server's IP is not on the chinaz key's whitelist: add it in the chinaz console",
}

// Check runs the chinaz step for domain.
func (c *Checker) Check(ctx context.Context, domain string) check.Verdict {
	domain = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
	ev := &Evidence{Domain: domain, MinWeight: c.cfg.MinWeight}
	if !httpcheck.ValidDomain(domain) {
		ev.Rule = RuleInvalidDomain
		return check.NewVerdict(baton.OutcomeReject, "invalid domain name", ev)
	}
	switch {
	case c.cfg.Key == "":
		return c.alert(ev, RuleNotConfigured, "no chinaz API key is configured: set chinaz.key")
	case c.cfg.API == "":
		return c.alert(ev, RuleNotConfigured, "the chinaz weight API path is not configured (it is unknown): set chinaz.api")
	}
	u := c.cfg.BaseURL + "/single/" + url.PathEscape(c.cfg.API) + "?" +
		url.Values{"key": {c.cfg.Key.Reveal()}, "domain": {domain}}.Encode()
	ev.Request = c.redact(u)
	resp, err := c.fetch.Get(ctx, u, http.Header{"Accept": {"application/json"}})
	if err != nil {
		var te *check.TransientError
		ev.Rule = RuleTransient
		if errors.As(err, &te) {
			ev.HTTPStatus, ev.Raw = te.StatusCode, c.redact(te.Evidence)
			if env, perr := ParseEnvelope([]byte(te.Evidence)); perr == nil {
				ev.StateCode, ev.Reason = env.StateCode, env.Reason
			}
			switch {
			case te.StatusCode == http.StatusTooManyRequests:
				ev.Rule = RuleRateLimited
			case te.StatusCode == 531:
				ev.Rule = RuleRateLimited
				if te.RetryAfter == 0 {
					te.RetryAfter = c.cfg.RateLimitedDelay
				}
			}
		}
		return check.RetryVerdict(err, ev)
	}
	ev.HTTPStatus, ev.Raw = resp.StatusCode, c.redact(resp.Evidence())
	env, perr := ParseEnvelope(resp.Body)
	if perr == nil {
		ev.StateCode, ev.Reason = env.StateCode, env.Reason
	}
	code := int64(resp.StatusCode)
	if code == http.StatusOK && env.StateCode != nil && *env.StateCode != 1 {
		code = *env.StateCode // the older API reports errors in StateCode
	}
	if msg, ok := configProblems[code]; ok {
		return c.alert(ev, RuleConfig, fmt.Sprintf("%s (chinaz answered %d %s)", msg, code, ev.Reason))
	}
	switch {
	case code == 436:
		ev.Rule = RuleQuota
		ra, ok := check.ParseRetryAfter(resp.Header.Get("Retry-After"), c.env.Now())
		if !ok {
			ra = c.cfg.QuotaDelay
		}
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode, RetryAfter: ra,
			Err: fmt.Errorf("%w: chinaz quota used up (436 %s)", check.ErrRateLimited, ev.Reason)}, ev)
	case code == 531:
		ev.Rule = RuleRateLimited
		ra, ok := check.ParseRetryAfter(resp.Header.Get("Retry-After"), c.env.Now())
		if !ok {
			ra = c.cfg.RateLimitedDelay
		}
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode, RetryAfter: ra,
			Err: fmt.Errorf("%w: chinaz says too frequent (531 %s)", check.ErrRateLimited, ev.Reason)}, ev)
	case resp.StatusCode == http.StatusNotFound:
		return c.alert(ev, RuleConfig, fmt.Sprintf("chinaz answered 404 for API %q: check chinaz.api and chinaz.baseUrl", c.cfg.API))
	case resp.StatusCode != http.StatusOK:
		ev.Rule = RuleHTTPStatus
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: HTTP %d %s", check.ErrSuspiciousAnswer, resp.StatusCode, ev.Reason)}, ev)
	case perr != nil:
		ev.Rule = RuleMalformed
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: %w", check.ErrSuspiciousAnswer, perr)}, ev)
	case *env.StateCode != 1:
		ev.Rule = RuleState
		return check.RetryVerdict(&check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: StateCode %d: %s", check.ErrSuspiciousAnswer, *env.StateCode, ev.Reason)}, ev)
	}
	w, found := Weight(env.Doc, c.paths)
	ev.Weights = found
	if found == nil {
		return c.alert(ev, RuleNoWeight, fmt.Sprintf("chinaz answered StateCode 1 but none of weightPaths %q holds a number: set chinaz.weightPaths to the real field", c.cfg.WeightPaths))
	}
	ev.Weight = &w
	if w < c.cfg.MinWeight {
		ev.Rule = RuleBelow
		return check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("chinaz Baidu weight %d is below %d", w, c.cfg.MinWeight), ev)
	}
	ev.Rule = RuleWeight
	return check.NewVerdict(baton.OutcomePass, fmt.Sprintf("chinaz Baidu weight %d", w), ev)
}

func (c *Checker) alert(ev *Evidence, rule, msg string) check.Verdict {
	ev.Rule = rule
	ev.Alert = &check.Alert{Code: AlertCode, Message: msg}
	v := check.NewVerdict(baton.OutcomeRetry, msg, ev)
	v.RetryAfter = c.cfg.AlertDelay
	return v
}
