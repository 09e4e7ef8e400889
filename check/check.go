package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
)

// Checker runs one pipeline step for one domain.
//
// Check must not return OutcomeRetry for a business reason, nor a business
// outcome for an outside failure. It must honour ctx and be safe for
// concurrent use.
type Checker interface {
	// Step is the pipeline step name ("register", "wayback", ...).
	Step() string
	// Check vets domain (already normalized to lower-case ASCII) and returns
	// the verdict with its evidence.
	Check(ctx context.Context, domain string) Verdict
}

// BatchChecker is a Checker whose provider answers for many domains in one
// call (aizhan takes up to 50). The pipeline may call CheckBatch instead of
// Check; verdicts are returned in the order of domains.
type BatchChecker interface {
	Checker
	// MaxBatch is the most domains one CheckBatch call accepts.
	MaxBatch() int
	// CheckBatch vets domains; len(result) == len(domains).
	CheckBatch(ctx context.Context, domains []string) []Verdict
}

// Verdict is a checker's answer for one domain.
type Verdict struct {
	// Outcome is pass, reject, black_hit or retry.
	Outcome baton.Outcome
	// Reason is a short human-readable explanation.
	Reason string
	// Data is the evidence as a JSON object: what the provider said, the raw
	// answer truncated, and which rule decided.
	Data json.RawMessage
	// RetryAfter is the provider-requested delay for OutcomeRetry (0 = none).
	RetryAfter time.Duration
}

// MaxRetryAfter caps any delay a provider asks for; it matches the bound of
// baton.Result.RetryAfterMs.
const MaxRetryAfter = 24 * time.Hour

// Result turns v into the standardized result a worker reports for the task
// holding leaseToken. Reason is cut to baton.MaxReasonLen and invalid Data
// is replaced by a JSON string so the result always validates.
func (v Verdict) Result(leaseToken string) baton.Result {
	r := baton.Result{LeaseToken: leaseToken, Outcome: v.Outcome, Reason: v.Reason, Data: v.Data}
	if len(r.Reason) > baton.MaxReasonLen {
		r.Reason = TruncateUTF8(r.Reason, baton.MaxReasonLen)
	}
	if len(r.Data) > 0 && !json.Valid(r.Data) {
		r.Data, _ = json.Marshal(string(r.Data))
	}
	if v.Outcome == baton.OutcomeRetry && v.RetryAfter > 0 {
		ra := min(v.RetryAfter, MaxRetryAfter)
		r.RetryAfterMs = int64(ra / time.Millisecond)
	}
	return r
}

// NewVerdict builds a verdict whose Data is evidence marshalled to JSON. A
// marshalling failure is recorded in Data rather than lost.
func NewVerdict(o baton.Outcome, reason string, evidence any) Verdict {
	return Verdict{Outcome: o, Reason: reason, Data: MarshalEvidence(evidence)}
}

// MarshalEvidence returns evidence as JSON; nil gives nil.
func MarshalEvidence(evidence any) json.RawMessage {
	if evidence == nil {
		return nil
	}
	if raw, ok := evidence.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(evidence)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"evidenceError": err.Error()})
	}
	return b
}

// RetryVerdict is the verdict for an outside failure err. The retry delay
// comes from a *TransientError in err's chain, if any.
func RetryVerdict(err error, evidence any) Verdict {
	v := NewVerdict(baton.OutcomeRetry, err.Error(), evidence)
	var te *TransientError
	if errors.As(err, &te) {
		v.RetryAfter = te.RetryAfter
	}
	return v
}

// Env is what the program hands every checker: the outbound HTTP client (the
// egress guard is inside it), the dialer for raw TCP providers (WHOIS), the
// logger and the clock. Zero fields get working defaults in Defaults.
type Env struct {
	// HTTP is the client for every HTTP request. Default: a client with no
	// overall timeout (checkers put timeouts on each request's context).
	HTTP *http.Client
	// Dial opens raw TCP connections (WHOIS). Default: a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives debug and warning logs. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
}

// Defaults returns e with its zero fields set.
func (e Env) Defaults() Env {
	if e.HTTP == nil {
		e.HTTP = &http.Client{}
	}
	if e.Dial == nil {
		var d net.Dialer
		e.Dial = d.DialContext
	}
	if e.Logger == nil {
		e.Logger = slog.Default()
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	return e
}

// ErrDuplicateStep is returned by Registry.Register when a step already has a checker.
var ErrDuplicateStep = errors.New("check: step already registered")

// Registry maps pipeline step names to their checkers. It is safe for
// concurrent use; the zero value is empty and ready.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Checker
}

// NewRegistry returns a registry holding cs.
func NewRegistry(cs ...Checker) (*Registry, error) {
	r := &Registry{}
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds c under c.Step(). It fails with ErrDuplicateStep when the
// step is taken and on an empty step name.
func (r *Registry) Register(c Checker) error {
	step := c.Step()
	if step == "" {
		return errors.New("check: register: empty step name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[step]; ok {
		return fmt.Errorf("register %q: %w", step, ErrDuplicateStep)
	}
	if r.m == nil {
		r.m = make(map[string]Checker)
	}
	r.m[step] = c
	return nil
}

// Lookup returns the checker for step.
func (r *Registry) Lookup(step string) (Checker, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.m[step]
	return c, ok
}

// Steps returns the registered step names, sorted.
func (r *Registry) Steps() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for s := range r.m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Alert is an operator alert a checker puts in its verdict's Data under the
// key "alert" (e.g. a rejected API key): the controller surfaces any such
// object to the operator. Code names the problem ("chinaz_config",
// "jucha_auth", ...); Message says what to fix.
type Alert struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Redact returns s with every non-empty secret (and its URL query-escaped
// and path-escaped forms) replaced by "[REDACTED]", for URLs and bodies kept
// as evidence or shown in errors.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		for _, form := range []string{sec, url.QueryEscape(sec), url.PathEscape(sec)} {
			s = strings.ReplaceAll(s, form, redacted)
		}
	}
	return s
}
