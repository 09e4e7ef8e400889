package register

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/openrdap/rdap/bootstrap"
	"golang.org/x/net/idna"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/check"
)

// Step is the pipeline step name of this checker.
const Step = "register"

// DefaultBootstrapURL is IANA's RDAP bootstrap file for DNS.
const DefaultBootstrapURL = "https://data.iana.org/rdap/dns.json"

// DefaultWHOISServers are the port-43 servers of common TLDs RDAP may lack
// or that serve as fallback. Keys are TLDs (or public suffixes like "com.cn").
var DefaultWHOISServers = map[string]string{
	"com":    "whois.verisign-grs.com:43",
	"net":    "whois.verisign-grs.com:43",
	"org":    "whois.publicinterestregistry.org:43",
	"cn":     "whois.cnnic.cn:43",
	"com.cn": "whois.cnnic.cn:43",
	"net.cn": "whois.cnnic.cn:43",
	"org.cn": "whois.cnnic.cn:43",
	"io":     "whois.nic.io:43",
	"co":     "whois.nic.co:43",
	"xyz":    "whois.nic.xyz:43",
	"top":    "whois.nic.top:43",
	"info":   "whois.nic.info:43",
	"cc":     "ccwhois.verisign-grs.com:43",
	"tv":     "tvwhois.verisign-grs.com:43",
}

// DefaultRDAPNotEvidence are texts in a 404 body that mean "this server
// answers 404 for everything", not "this name is free".
var DefaultRDAPNotEvidence = []string{"No RDAP service"}

// Config configures the register checker. Zero fields take the defaults
// documented on each field.
type Config struct {
	// BootstrapURL is the RDAP DNS bootstrap file. Default DefaultBootstrapURL.
	BootstrapURL string `json:"bootstrapUrl"`
	// BootstrapTTL is how long a fetched bootstrap file is used. Default 24h.
	// A failed refresh keeps using the old copy.
	BootstrapTTL time.Duration `json:"bootstrapTtl"`
	// RDAPServers overrides the bootstrap per TLD: TLD → RDAP base URL
	// (with or without the trailing "/"). The override is authoritative.
	RDAPServers map[string]string `json:"rdapServers"`
	// WHOISServers maps TLD → host:port (":43" added when missing). Nil means
	// DefaultWHOISServers; an empty map disables WHOIS.
	WHOISServers map[string]string `json:"whoisServers"`
	// Timeout bounds one RDAP HTTP request. Default 15s.
	Timeout time.Duration `json:"timeout"`
	// WHOISTimeout bounds one WHOIS query. Default 10s.
	WHOISTimeout time.Duration `json:"whoisTimeout"`
	// WHOISMaxBytes caps a WHOIS answer. Default 256 KiB.
	WHOISMaxBytes int `json:"whoisMaxBytes"`
	// WHOISRateLimitDelay is the retry delay after a WHOIS rate-limit text. Default 1m.
	WHOISRateLimitDelay time.Duration `json:"whoisRateLimitDelay"`
	// DroppingOutcome is the outcome for a domain in pending delete or
	// redemption: pass (default) or reject.
	DroppingOutcome baton.Outcome `json:"droppingOutcome"`
	// RDAPNotEvidence are 404-body texts that make a 404 not evidence.
	// Nil means DefaultRDAPNotEvidence.
	RDAPNotEvidence []string `json:"rdapNotEvidence"`
	// WHOISNotFound are not-found line prefixes. Nil means DefaultWHOISNotFound.
	WHOISNotFound []string `json:"whoisNotFound"`
	// WHOISRateLimited are rate-limit texts. Nil means DefaultWHOISRateLimited.
	WHOISRateLimited []string `json:"whoisRateLimited"`
	// MaxEvidence caps the raw answer kept in evidence. Default 4 KiB.
	MaxEvidence int `json:"maxEvidence"`
}

func (c Config) withDefaults() Config {
	if c.BootstrapURL == "" {
		c.BootstrapURL = DefaultBootstrapURL
	}
	if c.BootstrapTTL <= 0 {
		c.BootstrapTTL = 24 * time.Hour
	}
	if c.WHOISServers == nil {
		c.WHOISServers = DefaultWHOISServers
	}
	if c.Timeout <= 0 {
		c.Timeout = check.DefaultTimeout
	}
	if c.WHOISTimeout <= 0 {
		c.WHOISTimeout = 10 * time.Second
	}
	if c.WHOISMaxBytes <= 0 {
		c.WHOISMaxBytes = 256 << 10
	}
	if c.WHOISRateLimitDelay <= 0 {
		c.WHOISRateLimitDelay = time.Minute
	}
	if c.DroppingOutcome == "" {
		c.DroppingOutcome = baton.OutcomePass
	}
	if c.RDAPNotEvidence == nil {
		c.RDAPNotEvidence = DefaultRDAPNotEvidence
	}
	if c.MaxEvidence <= 0 {
		c.MaxEvidence = check.DefaultMaxEvidence
	}
	return c
}

// Validate reports configuration errors.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if u, err := url.Parse(c.BootstrapURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		errs = append(errs, fmt.Errorf("register: bootstrapUrl %q must be an http(s) URL", c.BootstrapURL))
	}
	for tld, base := range c.RDAPServers {
		if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("register: rdapServers[%q] = %q must be an http(s) URL", tld, base))
		}
	}
	for tld, addr := range c.WHOISServers {
		if addr == "" || strings.ContainsAny(addr, "/ ") {
			errs = append(errs, fmt.Errorf("register: whoisServers[%q] = %q must be host or host:port", tld, addr))
		}
	}
	if c.DroppingOutcome != baton.OutcomePass && c.DroppingOutcome != baton.OutcomeReject {
		errs = append(errs, fmt.Errorf("register: droppingOutcome must be pass or reject, got %q", c.DroppingOutcome))
	}
	return errors.Join(errs...)
}

// Checker is the register step. It is safe for concurrent use.
type Checker struct {
	cfg   Config
	env   check.Env
	fetch check.Fetcher

	mu        sync.Mutex
	bootstrap *bootstrap.DNSRegistry
	fetchedAt time.Time
}

var _ check.Checker = (*Checker)(nil)

// New returns a register checker. It does no I/O.
func New(cfg Config, env check.Env) (*Checker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	env = env.Defaults()
	return &Checker{
		cfg: cfg,
		env: env,
		fetch: check.Fetcher{
			Client:      env.HTTP,
			Timeout:     cfg.Timeout,
			MaxEvidence: cfg.MaxEvidence,
			Now:         env.Now,
		},
	}, nil
}

// Step returns "register".
func (c *Checker) Step() string { return Step }

// Decision rules recorded in evidence.
const (
	RuleInvalidDomain   = "invalid-domain"
	RuleRDAP404         = "rdap-404-authoritative"
	RuleRDAPRegistered  = "rdap-registered"
	RuleRDAPDropping    = "rdap-dropping"
	RuleRDAPTransient   = "rdap-transient"
	RuleWHOISNotFound   = "whois-not-found"
	RuleWHOISRegistered = "whois-registered"
	RuleWHOISDropping   = "whois-dropping"
	RuleWHOISRateLimit  = "whois-rate-limited"
	RuleWHOISUnknown    = "whois-unrecognized"
	RuleWHOISTransient  = "whois-transient"
	RuleNoSource        = "no-source"
)

// Evidence is the register step's Verdict.Data.
type Evidence struct {
	Domain     string       `json:"domain"`
	Source     string       `json:"source,omitempty"` // "rdap" or "whois"
	Server     string       `json:"server,omitempty"`
	HTTPStatus int          `json:"httpStatus,omitempty"`
	Status     []string     `json:"status,omitempty"`
	Events     []Event      `json:"events,omitempty"`
	Dropping   bool         `json:"dropping,omitempty"`
	Rule       string       `json:"rule"`
	Line       string       `json:"line,omitempty"` // the WHOIS line that decided
	Note       string       `json:"note,omitempty"`
	Raw        string       `json:"raw,omitempty"`
	NotEvid    *rdapAttempt `json:"rdapNotEvidence,omitempty"`
}

// rdapAttempt records an RDAP answer that was not evidence.
type rdapAttempt struct {
	Server     string `json:"server"`
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Why        string `json:"why"`
	Raw        string `json:"raw,omitempty"`
}

// Check runs the register step for domain.
func (c *Checker) Check(ctx context.Context, domain string) check.Verdict {
	name, err := idna.Lookup.ToASCII(strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), "."))
	if err != nil || !strings.Contains(name, ".") {
		return check.NewVerdict(baton.OutcomeReject, "invalid domain name",
			Evidence{Domain: domain, Rule: RuleInvalidDomain, Note: fmt.Sprint(err)})
	}

	base, berr := c.rdapBase(ctx, name)
	var notEvid *rdapAttempt
	if base != "" {
		v, na := c.rdap(ctx, name, base)
		if na == nil {
			return v
		}
		notEvid = na
	}
	if addr := c.whoisServer(name); addr != "" {
		return c.whois(ctx, name, addr, notEvid)
	}
	ev := Evidence{Domain: name, Rule: RuleNoSource, NotEvid: notEvid}
	switch {
	case notEvid != nil:
		return check.NewVerdict(baton.OutcomeRetry, "RDAP answer is not evidence ("+notEvid.Why+") and no WHOIS server is configured for "+tldOf(name), ev)
	case berr != nil:
		ev.Note = berr.Error()
		return check.RetryVerdict(fmt.Errorf("RDAP bootstrap unavailable and no WHOIS server for %s: %w", tldOf(name), berr), ev)
	}
	return check.NewVerdict(baton.OutcomeRetry, "no RDAP or WHOIS server known for "+tldOf(name), ev)
}

// rdap asks base about name. A nil attempt means the verdict is final.
func (c *Checker) rdap(ctx context.Context, name, base string) (check.Verdict, *rdapAttempt) {
	u := strings.TrimSuffix(base, "/") + "/domain/" + name
	ev := Evidence{Domain: name, Source: "rdap", Server: base}
	resp, err := c.fetch.Get(ctx, u, http.Header{"Accept": {"application/rdap+json, application/json"}})
	if err != nil {
		ev.Rule = RuleRDAPTransient
		var te *check.TransientError
		if errors.As(err, &te) {
			ev.HTTPStatus, ev.Raw = te.StatusCode, te.Evidence
		}
		return check.RetryVerdict(fmt.Errorf("rdap %s: %w", name, err), ev), nil
	}
	ev.HTTPStatus, ev.Raw = resp.StatusCode, resp.Evidence()
	attempt := func(why string) (check.Verdict, *rdapAttempt) {
		return check.Verdict{}, &rdapAttempt{Server: base, HTTPStatus: resp.StatusCode, Why: why, Raw: ev.Raw}
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		if bu, err := url.Parse(base); err == nil && resp.FinalHost != "" && !strings.EqualFold(bu.Host, resp.FinalHost) {
			return attempt("404 from " + resp.FinalHost + ", not the listed server " + bu.Host)
		}
		for _, p := range c.cfg.RDAPNotEvidence {
			if p != "" && strings.Contains(strings.ToLower(string(resp.Body)), strings.ToLower(p)) {
				return attempt("404 says " + p)
			}
		}
		ev.Rule = RuleRDAP404
		return check.NewVerdict(baton.OutcomePass, "available: RDAP 404 from "+base, ev), nil
	case resp.StatusCode != http.StatusOK:
		return attempt(fmt.Sprintf("unexpected HTTP %d", resp.StatusCode))
	}
	d, err := ParseRDAPDomain(resp.Body)
	if err != nil {
		return attempt(err.Error())
	}
	if d.LDHName != "" && !strings.EqualFold(strings.TrimSuffix(d.LDHName, "."), name) {
		return attempt("answer is for " + d.LDHName)
	}
	ev.Status, ev.Events = d.Status, d.Events
	return c.registered(ev, RuleRDAPDropping, RuleRDAPRegistered), nil
}

// registered decides for a name with a record: dropping or taken.
func (c *Checker) registered(ev Evidence, dropRule, takenRule string) check.Verdict {
	if isDropping(ev.Status) {
		ev.Dropping, ev.Rule = true, dropRule
		return check.NewVerdict(c.cfg.DroppingOutcome, "dropping: "+strings.Join(ev.Status, ", "), ev)
	}
	ev.Rule = takenRule
	reason := "registered"
	if len(ev.Status) > 0 {
		reason += ": " + strings.Join(ev.Status, ", ")
	}
	return check.NewVerdict(baton.OutcomeReject, reason, ev)
}

func (c *Checker) whois(ctx context.Context, name, addr string, notEvid *rdapAttempt) check.Verdict {
	ev := Evidence{Domain: name, Source: "whois", Server: addr, NotEvid: notEvid}
	raw, err := queryWHOIS(ctx, c.env.Dial, addr, name, c.cfg.WHOISMaxBytes, c.cfg.WHOISTimeout)
	ev.Raw = check.Truncate(raw, c.cfg.MaxEvidence)
	if err != nil && !errors.Is(err, errWHOISTooLarge) {
		ev.Rule = RuleWHOISTransient
		return check.RetryVerdict(&check.TransientError{URL: "whois://" + addr, Err: err}, ev)
	}
	ans := ParseWHOIS(string(raw), c.cfg.WHOISNotFound, c.cfg.WHOISRateLimited)
	ev.Line, ev.Status = ans.Line, ans.Status
	switch ans.State {
	case WHOISAvailable:
		ev.Rule = RuleWHOISNotFound
		return check.NewVerdict(baton.OutcomePass, "available: WHOIS "+addr+" says "+ans.Line, ev)
	case WHOISRegistered:
		return c.registered(ev, RuleWHOISDropping, RuleWHOISRegistered)
	case WHOISRateLimited:
		ev.Rule = RuleWHOISRateLimit
		return check.RetryVerdict(&check.TransientError{URL: "whois://" + addr, RetryAfter: c.cfg.WHOISRateLimitDelay,
			Err: fmt.Errorf("%w: %s", check.ErrRateLimited, ans.Line)}, ev)
	}
	ev.Rule = RuleWHOISUnknown
	why := "unrecognized WHOIS answer"
	if len(raw) == 0 {
		why = "empty WHOIS answer"
	}
	return check.RetryVerdict(&check.TransientError{URL: "whois://" + addr, Err: fmt.Errorf("%w: %s", check.ErrSuspiciousAnswer, why)}, ev)
}

// rdapBase returns the RDAP base URL for name ("" when none is known).
func (c *Checker) rdapBase(ctx context.Context, name string) (string, error) {
	if base := lookupSuffix(c.cfg.RDAPServers, name); base != "" {
		return base, nil
	}
	reg, err := c.loadBootstrap(ctx)
	if reg == nil {
		return "", err
	}
	ans, _ := reg.Lookup(&bootstrap.Question{RegistryType: bootstrap.DNS, Query: name})
	if ans == nil || len(ans.URLs) == 0 {
		return "", err
	}
	for _, u := range ans.URLs {
		if u.Scheme == "https" {
			return u.String(), nil
		}
	}
	return ans.URLs[0].String(), nil
}

// loadBootstrap returns the cached bootstrap registry, refreshing it when
// older than BootstrapTTL. On a failed refresh the old copy (if any) is
// returned with the error.
func (c *Checker) loadBootstrap(ctx context.Context) (*bootstrap.DNSRegistry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.env.Now()
	if c.bootstrap != nil && now.Sub(c.fetchedAt) < c.cfg.BootstrapTTL {
		return c.bootstrap, nil
	}
	resp, err := c.fetch.Get(ctx, c.cfg.BootstrapURL, nil)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if err == nil && resp.Truncated {
		err = errors.New("bootstrap file larger than the body cap")
	}
	var reg *bootstrap.DNSRegistry
	if err == nil {
		reg, err = bootstrap.NewDNSRegistry(resp.Body)
	}
	if err != nil {
		err = fmt.Errorf("fetch RDAP bootstrap %s: %w", c.cfg.BootstrapURL, err)
		c.env.Logger.Warn("rdap bootstrap refresh failed", "component", "check.register", "err", err)
		return c.bootstrap, err
	}
	c.bootstrap, c.fetchedAt = reg, now
	return reg, nil
}

// whoisServer returns host:port of the WHOIS server for name, "" if none.
func (c *Checker) whoisServer(name string) string {
	addr := lookupSuffix(c.cfg.WHOISServers, name)
	if addr == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "43")
	}
	return addr
}

// lookupSuffix finds the longest suffix of name ("a.com.cn" → "com.cn", "cn")
// present in m.
func lookupSuffix(m map[string]string, name string) string {
	for s := name; ; {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			return ""
		}
		s = s[i+1:]
		if v, ok := m[s]; ok {
			return v
		}
	}
}

func tldOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return "." + name[i+1:]
	}
	return name
}
