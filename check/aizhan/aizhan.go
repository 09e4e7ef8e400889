package aizhan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/httpcheck"
)

// Step is the pipeline step name of this checker.
const Step = "aizhan"

// DefaultBaseURL is the aizhan apistore.
const DefaultBaseURL = "https://apistore.aizhan.com"

// MaxDomainsPerCall is the most domains one apistore call takes.
const MaxDomainsPerCall = 50

// AlertCode is the code of the operator alert this step raises.
const AlertCode = "aizhan_config"

// DefaultKeyErrorCodes are the answer codes read as "bad key". GUESS: the
// real codes are not documented (providers.md); 100002 is what the baton
// sandbox sends.
var DefaultKeyErrorCodes = []int64{100002}

// Config configures the aizhan checker. Zero fields take the defaults
// documented on each field.
type Config struct {
	// BaseURL of the apistore. Default DefaultBaseURL.
	BaseURL string `json:"baseUrl"`
	// Key is the apistore key (it goes in the URL path; redacted everywhere).
	// While it is empty every check retries with an alert "aizhan_config".
	Key check.Secret `json:"key"`
	// MinWeight: a Baidu rank (max of pc_br, m_br) at or above it passes,
	// below rejects. Default 1.
	MinWeight int64 `json:"minWeight"`
	// UseHistory also asks site/hisinfos and decides on the largest of
	// pc_br, m_br, pc_br_max and m_br_max (the historical max). Default false.
	UseHistory bool `json:"useHistory"`
	// HistoryType is the hisinfos "type" parameter. Default "0".
	HistoryType string `json:"historyType"`
	// KeyErrorCodes are answer codes meaning the key is wrong or not
	// allowed (retry + alert). Nil means DefaultKeyErrorCodes. HTTP 401 and
	// 403 always count.
	KeyErrorCodes []int64 `json:"keyErrorCodes"`
	// MaxBatch is the most domains per call. Default and maximum 50.
	MaxBatch int `json:"maxBatch"`
	// AlertDelay is the retry delay of a verdict carrying an alert. Default 5m.
	AlertDelay time.Duration `json:"alertDelay"`
	// Timeout bounds one request. Default 15s.
	Timeout time.Duration `json:"timeout"`
	// MaxEvidence caps the raw answer kept in evidence. Default 4 KiB.
	MaxEvidence int `json:"maxEvidence"`
	// UserAgent sent to the apistore. Default "baton-aizhan/1".
	UserAgent string `json:"userAgent"`
}

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimSuffix(c.BaseURL, "/")
	if c.MinWeight <= 0 {
		c.MinWeight = 1
	}
	if c.HistoryType == "" {
		c.HistoryType = "0"
	}
	if c.KeyErrorCodes == nil {
		c.KeyErrorCodes = DefaultKeyErrorCodes
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = MaxDomainsPerCall
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
		c.UserAgent = "baton-aizhan/1"
	}
	return c
}

// Validate reports configuration errors.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("aizhan: baseUrl %q must be an http(s) URL", c.BaseURL))
	}
	if c.MaxBatch > MaxDomainsPerCall {
		errs = append(errs, fmt.Errorf("aizhan: maxBatch %d is more than the apistore's %d", c.MaxBatch, MaxDomainsPerCall))
	}
	if strings.ContainsAny(c.Key.Reveal(), "/?#") {
		errs = append(errs, errors.New("aizhan: key contains '/', '?' or '#'"))
	}
	if c.MaxEvidence > 1<<20 {
		errs = append(errs, fmt.Errorf("aizhan: maxEvidence %d is more than 1 MiB", c.MaxEvidence))
	}
	return errors.Join(errs...)
}

// Checker is the aizhan step; it answers up to MaxBatch domains per call.
// It is safe for concurrent use.
type Checker struct {
	cfg   Config
	env   check.Env
	fetch check.Fetcher
}

var _ check.BatchChecker = (*Checker)(nil)

// New returns an aizhan checker. It does no I/O; a missing key is reported
// per check (retry + alert), so the program can start with the step unconfigured.
func New(cfg Config, env check.Env) (*Checker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	env = env.Defaults()
	c := &Checker{cfg: cfg, env: env}
	c.fetch = check.Fetcher{Client: env.HTTP, Timeout: cfg.Timeout, MaxEvidence: cfg.MaxEvidence,
		UserAgent: cfg.UserAgent, Now: env.Now, Redact: c.redact}
	return c, nil
}

// Step returns "aizhan".
func (c *Checker) Step() string { return Step }

// MaxBatch returns Config.MaxBatch (at most 50).
func (c *Checker) MaxBatch() int { return c.cfg.MaxBatch }

func (c *Checker) redact(s string) string { return check.Redact(s, c.cfg.Key.Reveal()) }

// Decision rules recorded in evidence.
const (
	RuleNotConfigured = "not-configured" // no key: retry + alert
	RuleKey           = "key-error"      // KeyErrorCodes / 401 / 403: retry + alert
	RuleTransient     = "transient"      // 429 / 5xx / timeout / connection error
	RuleHTTPStatus    = "http-status"    // another non-200 status
	RuleMalformed     = "malformed"      // not the apistore envelope
	RuleCode          = "provider-code"  // code ≠ 200000 (not a key error)
	RuleFailed        = "in-failed"      // the domain is listed in data.failed
	RuleMissing       = "missing"        // in neither list
	RuleNoRank        = "rank-unreadable"
	RuleBelow         = "below-min-weight"
	RuleRank          = "rank-ok"
	RuleInvalidDomain = "invalid-domain"
)

// Evidence is the aizhan step's Verdict.Data for one domain.
type Evidence struct {
	Domain     string          `json:"domain"`
	Request    string          `json:"request,omitempty"` // key redacted
	Rule       string          `json:"rule"`
	HTTPStatus int             `json:"httpStatus,omitempty"`
	Code       *int64          `json:"code,omitempty"`
	Msg        string          `json:"msg,omitempty"`
	PCBR       *int64          `json:"pcBr,omitempty"`
	MBR        *int64          `json:"mBr,omitempty"`
	IP         *Range          `json:"ip,omitempty"`
	PCBRMax    *int64          `json:"pcBrMax,omitempty"`
	MBRMax     *int64          `json:"mBrMax,omitempty"`
	PCMaxTime  string          `json:"pcMaxTime,omitempty"`
	MMaxTime   string          `json:"mMaxTime,omitempty"`
	Weight     *int64          `json:"weight,omitempty"`
	WeightFrom string          `json:"weightFrom,omitempty"` // pc_br, m_br, pc_br_max, m_br_max
	MinWeight  int64           `json:"minWeight"`
	Row        json.RawMessage `json:"row,omitempty"`     // this domain's siteinfos row as sent
	History    json.RawMessage `json:"history,omitempty"` // this domain's hisinfos row as sent
	Alert      *check.Alert    `json:"alert,omitempty"`
	Raw        string          `json:"raw,omitempty"` // start of the answer, on failures
}

// Check runs the aizhan step for one domain (a batch of one).
func (c *Checker) Check(ctx context.Context, domain string) check.Verdict {
	return c.CheckBatch(ctx, []string{domain})[0]
}

// CheckBatch runs the step for domains, MaxBatch per call; verdicts come
// back in the order of domains (a repeated domain gets the same verdict).
func (c *Checker) CheckBatch(ctx context.Context, domains []string) []check.Verdict {
	out := make([]check.Verdict, len(domains))
	idx := map[string][]int{}
	var valid []string
	for i, d := range domains {
		d = normalize(d)
		if !httpcheck.ValidDomain(d) {
			out[i] = check.NewVerdict(baton.OutcomeReject, "invalid domain name",
				&Evidence{Domain: d, Rule: RuleInvalidDomain, MinWeight: c.cfg.MinWeight})
			continue
		}
		if _, seen := idx[d]; !seen {
			valid = append(valid, d)
		}
		idx[d] = append(idx[d], i)
	}
	for chunk := range slices.Chunk(valid, c.cfg.MaxBatch) {
		for d, v := range c.batch(ctx, chunk) {
			for _, i := range idx[d] {
				out[i] = v
			}
		}
	}
	return out
}

// call is one apistore request's outcome shared by its domains.
type call struct {
	req    string
	status int
	ans    Answer
	raw    string
	err    error
	alert  *check.Alert
	rule   string
	reason string
}

func (c *Checker) get(ctx context.Context, api string, domains []string, extra url.Values) call {
	u := c.cfg.BaseURL + "/" + api + "/" + url.PathEscape(c.cfg.Key.Reveal()) + "?domains=" + strings.Join(domains, "|")
	for k, vs := range extra {
		for _, v := range vs {
			u += "&" + url.QueryEscape(k) + "=" + url.QueryEscape(v)
		}
	}
	cl := call{req: c.redact(u)}
	resp, err := c.fetch.Get(ctx, u, http.Header{"Accept": {"application/json"}})
	if err != nil {
		cl.err, cl.rule = err, RuleTransient
		var te *check.TransientError
		if errors.As(err, &te) {
			cl.status, cl.raw = te.StatusCode, c.redact(te.Evidence)
		}
		return cl
	}
	cl.status, cl.raw = resp.StatusCode, c.redact(resp.Evidence())
	ans, perr := ParseAnswer(resp.Body)
	cl.ans = ans
	keyErr := ans.Code.Valid && slices.Contains(c.cfg.KeyErrorCodes, ans.Code.Lo)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || keyErr:
		cl.rule = RuleKey
		cl.alert = &check.Alert{Code: AlertCode, Message: fmt.Sprintf(
			"aizhan rejected the API key (HTTP %d, code %s, %q): check aizhan.key and the key's quota/whitelist",
			resp.StatusCode, codeText(ans.Code), c.redact(ans.Msg))}
		cl.reason = cl.alert.Message
	case resp.StatusCode != http.StatusOK:
		cl.rule = RuleHTTPStatus
		cl.err = &check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: HTTP %d", check.ErrSuspiciousAnswer, resp.StatusCode)}
	case perr != nil:
		cl.rule = RuleMalformed
		cl.err = &check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: %w", check.ErrSuspiciousAnswer, perr)}
	case ans.Code.Lo != SuccessCode:
		cl.rule = RuleCode
		cl.err = &check.TransientError{URL: resp.URL, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: code %d: %s", check.ErrSuspiciousAnswer, ans.Code.Lo, c.redact(ans.Msg))}
	}
	return cl
}

func codeText(n Number) string {
	if !n.Valid {
		return "?"
	}
	return fmt.Sprint(n.Lo)
}

// callFailed returns the verdict for a domain of a call that failed as a whole, or false.
func (c *Checker) callFailed(cl call, ev *Evidence) (check.Verdict, bool) {
	if cl.rule == "" {
		return check.Verdict{}, false
	}
	ev.Rule, ev.Request, ev.HTTPStatus, ev.Raw = cl.rule, cl.req, cl.status, cl.raw
	if cl.ans.Code.Valid {
		code := cl.ans.Code.Lo
		ev.Code, ev.Msg = &code, c.redact(cl.ans.Msg)
	}
	if cl.alert != nil {
		ev.Alert = cl.alert
		v := check.NewVerdict(baton.OutcomeRetry, cl.reason, ev)
		v.RetryAfter = c.cfg.AlertDelay
		return v, true
	}
	return check.RetryVerdict(cl.err, ev), true
}

func (c *Checker) batch(ctx context.Context, domains []string) map[string]check.Verdict {
	out := make(map[string]check.Verdict, len(domains))
	newEv := func(d string) *Evidence { return &Evidence{Domain: d, MinWeight: c.cfg.MinWeight} }
	if c.cfg.Key == "" {
		for _, d := range domains {
			ev := newEv(d)
			ev.Rule = RuleNotConfigured
			ev.Alert = &check.Alert{Code: AlertCode, Message: "no aizhan apistore key is configured: set aizhan.key"}
			v := check.NewVerdict(baton.OutcomeRetry, ev.Alert.Message, ev)
			v.RetryAfter = c.cfg.AlertDelay
			out[d] = v
		}
		return out
	}
	site := c.get(ctx, "baidurank/siteinfos", domains, nil)
	rows := map[string]Row{}
	failed := map[string]bool{}
	for _, r := range site.ans.Success {
		rows[r.Domain] = r
	}
	for _, f := range site.ans.Failed {
		failed[f] = true
	}
	var hist call
	histRows := map[string]Row{}
	histFailed := map[string]bool{}
	if c.cfg.UseHistory && site.rule == "" {
		var ask []string
		for _, d := range domains {
			if _, ok := rows[d]; ok {
				ask = append(ask, d)
			}
		}
		if len(ask) > 0 {
			hist = c.get(ctx, "site/hisinfos", ask, url.Values{"type": {c.cfg.HistoryType}})
			for _, r := range hist.ans.Success {
				histRows[r.Domain] = r
			}
			for _, f := range hist.ans.Failed {
				histFailed[f] = true
			}
		}
	}
	for _, d := range domains {
		ev := newEv(d)
		if v, ok := c.callFailed(site, ev); ok {
			out[d] = v
			continue
		}
		ev.Request, ev.HTTPStatus = site.req, site.status
		code := site.ans.Code.Lo
		ev.Code, ev.Msg = &code, site.ans.Msg
		row, ok := rows[d]
		switch {
		case !ok && failed[d]:
			ev.Rule, ev.Raw = RuleFailed, site.raw
			out[d] = check.NewVerdict(baton.OutcomeRetry, "aizhan listed "+d+" as failed", ev)
			continue
		case !ok:
			ev.Rule, ev.Raw = RuleMissing, site.raw
			out[d] = check.NewVerdict(baton.OutcomeRetry, "aizhan answered neither success nor failed for "+d, ev)
			continue
		}
		ev.Row = row.Raw
		cands := []candidate{{"pc_br", row.PCBR}, {"m_br", row.MBR}}
		ev.PCBR, ev.MBR = intPtr(row.PCBR), intPtr(row.MBR)
		if row.IP.Valid {
			ip := row.IP.Range
			ev.IP = &ip
		}
		if c.cfg.UseHistory {
			hev := *ev
			if v, ok := c.callFailed(hist, &hev); ok {
				out[d] = v
				continue
			}
			hrow, ok := histRows[d]
			if !ok {
				ev.Rule, ev.Raw = RuleMissing, hist.raw
				if histFailed[d] {
					ev.Rule = RuleFailed
				}
				out[d] = check.NewVerdict(baton.OutcomeRetry, "aizhan history has no row for "+d, ev)
				continue
			}
			ev.History = hrow.Raw
			ev.PCBRMax, ev.MBRMax = intPtr(hrow.PCBRMax), intPtr(hrow.MBRMax)
			ev.PCMaxTime, ev.MMaxTime = hrow.PCMaxTime, hrow.MMaxTime
			cands = append(cands, candidate{"pc_br_max", hrow.PCBRMax}, candidate{"m_br_max", hrow.MBRMax})
		}
		for _, cd := range cands {
			if !cd.n.Valid {
				continue
			}
			if ev.Weight == nil || cd.n.Hi > *ev.Weight {
				w := cd.n.Hi
				ev.Weight, ev.WeightFrom = &w, cd.name
			}
		}
		switch {
		case ev.Weight == nil:
			ev.Rule, ev.Raw = RuleNoRank, site.raw
			out[d] = check.RetryVerdict(&check.TransientError{URL: site.req,
				Err: fmt.Errorf("%w: no readable pc_br / m_br for %s", check.ErrSuspiciousAnswer, d)}, ev)
		case *ev.Weight < c.cfg.MinWeight:
			ev.Rule = RuleBelow
			out[d] = check.NewVerdict(baton.OutcomeReject, fmt.Sprintf("aizhan Baidu rank %d (%s) is below %d", *ev.Weight, ev.WeightFrom, c.cfg.MinWeight), ev)
		default:
			ev.Rule = RuleRank
			out[d] = check.NewVerdict(baton.OutcomePass, fmt.Sprintf("aizhan Baidu rank %d (%s)", *ev.Weight, ev.WeightFrom), ev)
		}
	}
	return out
}

// candidate is a rank field that may decide the weight.
type candidate struct {
	name string
	n    Number
}

func intPtr(n Number) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Hi
	return &v
}
