package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Fetcher defaults.
const (
	DefaultTimeout          = 15 * time.Second
	DefaultMaxBody          = 2 << 20 // 2 MiB
	DefaultMaxEvidence      = 4 << 10 // 4 KiB
	DefaultRateLimitedDelay = time.Minute
)

// TransientError is an outside failure that must become OutcomeRetry: HTTP
// 429 or 5xx, a timeout, a connection error, a captcha page, a suspicious
// empty answer.
type TransientError struct {
	// URL is the request URL (never carries credentials a provider put in a
	// path: checkers pass a redacted form via Fetcher.Redact).
	URL string
	// StatusCode is the HTTP status, 0 when no answer arrived.
	StatusCode int
	// RetryAfter is the delay the provider asked for (0 = none).
	RetryAfter time.Duration
	// Evidence is the start of the answer body, if any.
	Evidence string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *TransientError) Error() string {
	var b strings.Builder
	b.WriteString("transient failure")
	if e.URL != "" {
		b.WriteString(" from " + e.URL)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *TransientError) Unwrap() error { return e.Err }

// Sentinel causes carried by TransientError.
var (
	// ErrRateLimited: the provider answered 429 or a rate-limit text.
	ErrRateLimited = errors.New("check: rate limited by provider")
	// ErrServerError: the provider answered 5xx.
	ErrServerError = errors.New("check: provider server error")
	// ErrCaptcha: the provider answered a captcha / anti-bot page.
	ErrCaptcha = errors.New("check: provider demands a captcha")
	// ErrSuspiciousAnswer: the answer is not evidence (e.g. HTTP 200 with an empty body).
	ErrSuspiciousAnswer = errors.New("check: suspicious provider answer")
)

// Fetcher does HTTP requests for checkers: a timeout per request, a cap on
// the body read, and outside failures mapped to *TransientError. The zero
// value with Client set is usable.
type Fetcher struct {
	// Client is the injected HTTP client (egress-guarded). Default http.DefaultClient.
	Client *http.Client
	// Timeout bounds one request including the body read. Default 15s.
	Timeout time.Duration
	// MaxBody caps the bytes read from a body. Default 2 MiB; longer bodies are cut.
	MaxBody int64
	// MaxEvidence caps the body kept as evidence. Default 4 KiB.
	MaxEvidence int
	// RateLimitedDelay is the retry delay for a 429 without Retry-After. Default 1m.
	RateLimitedDelay time.Duration
	// UserAgent, when set, is sent with every request.
	UserAgent string
	// Now is the clock for HTTP-date Retry-After. Default time.Now.
	Now func() time.Time
	// Redact, when set, rewrites a URL before it appears in errors/evidence
	// (to hide a key in a path or query).
	Redact func(string) string
}

// Response is a fully read HTTP answer.
type Response struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Header is the response header.
	Header http.Header
	// Body is the body, at most Fetcher.MaxBody bytes.
	Body []byte
	// Truncated reports that the body was longer than MaxBody.
	Truncated bool
	// URL is the final URL after redirects (redacted).
	URL string
	// FinalHost is the host that gave this answer after redirects.
	FinalHost string

	maxEvidence int
}

// Evidence returns the start of the body (valid UTF-8, at most MaxEvidence
// bytes) for keeping in a verdict.
func (r *Response) Evidence() string {
	n := r.maxEvidence
	if n <= 0 {
		n = DefaultMaxEvidence
	}
	return Truncate(r.Body, n)
}

// Get fetches url with the extra header h (may be nil).
func (f *Fetcher) Get(ctx context.Context, url string, h http.Header) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	return f.Do(req)
}

// Do sends req. It returns a *TransientError (wrapped) for 429, 5xx, timeouts
// and transport errors; any other status is returned as a Response for the
// checker to interpret. A non-transient error means the request itself was
// malformed.
func (f *Fetcher) Do(req *http.Request) (*Response, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	defer cancel()
	req = req.WithContext(ctx)
	if f.UserAgent != "" && req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", f.UserAgent)
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	shownURL := f.redact(req.URL.String())
	resp, err := client.Do(req)
	if err != nil {
		return nil, &TransientError{URL: shownURL, Err: fmt.Errorf("GET: %w", stripURLError(err))}
	}
	defer resp.Body.Close()

	maxBody := f.MaxBody
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	out := &Response{
		StatusCode:  resp.StatusCode,
		Header:      resp.Header,
		URL:         shownURL,
		maxEvidence: f.MaxEvidence,
	}
	if resp.Request != nil && resp.Request.URL != nil {
		out.URL = f.redact(resp.Request.URL.String())
		out.FinalHost = resp.Request.URL.Host
	}
	if int64(len(body)) > maxBody {
		body, out.Truncated = body[:maxBody], true
	}
	out.Body = body
	if err != nil {
		return nil, &TransientError{URL: shownURL, StatusCode: resp.StatusCode, Evidence: out.Evidence(),
			Err: fmt.Errorf("read body: %w", err)}
	}

	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		ra, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), f.now())
		if !ok {
			ra = f.RateLimitedDelay
			if ra <= 0 {
				ra = DefaultRateLimitedDelay
			}
		}
		return nil, &TransientError{URL: shownURL, StatusCode: resp.StatusCode, RetryAfter: ra,
			Evidence: out.Evidence(), Err: ErrRateLimited}
	case resp.StatusCode >= 500:
		ra, _ := ParseRetryAfter(resp.Header.Get("Retry-After"), f.now())
		return nil, &TransientError{URL: shownURL, StatusCode: resp.StatusCode, RetryAfter: ra,
			Evidence: out.Evidence(), Err: ErrServerError}
	}
	return out, nil
}

func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Fetcher) redact(u string) string {
	if f.Redact != nil {
		return f.Redact(u)
	}
	return u
}

// stripURLError drops *url.Error's own copy of the URL (which may carry a
// key) while keeping the cause matchable with errors.Is.
func stripURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("timeout: %w", inner)
			}
			return inner
		}
	}
	return err
}

// ParseRetryAfter parses a Retry-After header value: delay-seconds or an
// HTTP-date (RFC 9110 §10.2.3), relative to now. It reports false for an
// empty or malformed value. The delay is clamped to [0, MaxRetryAfter].
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 64 {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			// All digits but too large: treat as the cap.
			if ne, ok := err.(*strconv.NumError); ok && errors.Is(ne.Err, strconv.ErrRange) {
				return MaxRetryAfter, true
			}
			// A fractional value ("1.5") is tolerated by rounding up.
			if fl, ferr := strconv.ParseFloat(v, 64); ferr == nil && fl >= 0 {
				if fl >= MaxRetryAfter.Seconds() {
					return MaxRetryAfter, true
				}
				return time.Duration(fl * float64(time.Second)), true
			}
			return 0, false
		}
		if n >= uint64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	switch {
	case d < 0:
		return 0, true
	case d > MaxRetryAfter:
		return MaxRetryAfter, true
	}
	return d, true
}

// Truncate returns at most n bytes of b as valid UTF-8 (invalid bytes are
// replaced), marking a cut with "…".
func Truncate(b []byte, n int) string {
	return TruncateUTF8(string(b), n)
}

// TruncateUTF8 cuts s to at most n bytes on a rune boundary, replacing
// invalid UTF-8 and appending "…" when something was cut.
func TruncateUTF8(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	ell := "…"
	if n <= len(ell) {
		ell = ""
	}
	cut := max(n-len(ell), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ell
}
