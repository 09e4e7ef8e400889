// Package callback sends the PDF service's signed webhooks (SPEC §6; the
// HTML-to-PDF seed v2.1 §4): a JSON POST of Payload, signed with the API
// key's secret, retried with exponential backoff, every attempt recorded
// for the audit log, and replayable on demand.
//
// Signature: X-Signature: sha256=HEX(HMAC_SHA256(secret, body)) and
// X-Signature-Timestamp: <unix seconds>. The body carries sentAt, set anew
// for every attempt, so a receiver that remembers what it accepted can tell
// a replayed (or re-sent) body from a new one; it should also refuse
// timestamps more than a few minutes old.
//
// Every request goes through the HTTP client the caller gives (the egress
// policy's client in Baton): a callback URL that points at a refused
// address is refused at connect time, recorded, and not retried.
package callback

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	baton "github.com/batonhq/baton"
)

// Header names of a signed callback.
const (
	HeaderSignature = "X-Signature"
	HeaderTimestamp = "X-Signature-Timestamp"
)

// MaxResponseBody is how much of a receiver's answer is kept per attempt.
const MaxResponseBody = 4096

// Payload is the JSON body of a callback.
type Payload struct {
	TaskID     string    `json:"taskId"`
	Status     string    `json:"status"`
	ResultURL  string    `json:"resultUrl"`
	Error      string    `json:"error"`
	FinishedAt time.Time `json:"finishedAt"`
	// SentAt is set by the sender for every attempt.
	SentAt time.Time `json:"sentAt"`
}

// Sign returns the X-Signature value of body: "sha256=" and the hex HMAC-SHA256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature (an X-Signature value) is body's
// signature under secret, in constant time.
func Verify(secret string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(signature))
}

// Attempt is one recorded delivery attempt.
type Attempt struct {
	TaskID         string
	Attempt        int
	URL            string
	RequestBody    string
	ResponseStatus int // 0 when no answer came
	ResponseBody   string
	SentAt         time.Time
	ResponseAt     time.Time // zero when no answer came
	DurationMs     int64
	Error          string
	Replay         bool
}

// Config configures a Sender. Zero values take the documented defaults.
type Config struct {
	// HTTP sends the requests; required. Give it the egress policy's client.
	HTTP *http.Client
	// Record stores each attempt (the audit log); required. An error is
	// logged and does not stop the delivery.
	Record func(ctx context.Context, a Attempt) error
	// Timeout bounds one attempt. Default 10s.
	Timeout time.Duration
	// Attempts per delivery. Default 5.
	Attempts int
	// Backoff is the wait after the first failed attempt. Default 1s.
	Backoff time.Duration
	// Multiplier grows the wait after each later failure. Default 2.
	Multiplier float64
	// MaxDelay caps one wait. Default 5m.
	MaxDelay time.Duration
	// Clock; default time.Now.
	Clock func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Sender delivers callbacks.
type Sender struct {
	cfg Config
	log *slog.Logger
}

// New validates cfg and returns a Sender.
func New(cfg Config) (*Sender, error) {
	if cfg.HTTP == nil || cfg.Record == nil {
		return nil, errors.New("callback: Config.HTTP and Config.Record are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 5
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.Multiplier < 1 {
		cfg.Multiplier = 2
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 5 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Sender{cfg: cfg, log: cfg.Logger.With("component", "callback")}, nil
}

// Delivery is one callback to deliver.
type Delivery struct {
	TaskID string
	URL    string
	Secret string
	// Payload is sent with SentAt set anew for every attempt.
	Payload Payload
	// Attempts overrides Config.Attempts when positive.
	Attempts int
	// Multiplier overrides Config.Multiplier when at least 1.
	Multiplier float64
	// Replay marks the attempts as a replay in the audit log.
	Replay bool
	// FirstAttempt numbers the first attempt (default 1); a replay continues
	// after the attempts already logged.
	FirstAttempt int
}

// Outcome is what a delivery did.
type Outcome struct {
	Delivered      bool   `json:"delivered"`
	Attempts       int    `json:"attempts"`
	ResponseStatus int    `json:"responseStatus"`
	Error          string `json:"error,omitempty"`
}

// Deliver sends d until the receiver answers 2xx, a permanent failure
// occurs (a refused or invalid URL, a 4xx other than 408/429) or the
// attempts run out, waiting Backoff×Multiplier^(n-1) between attempts.
// Every attempt is recorded. ctx ends the delivery early.
func (s *Sender) Deliver(ctx context.Context, d Delivery) Outcome {
	attempts := d.Attempts
	if attempts <= 0 {
		attempts = s.cfg.Attempts
	}
	mult := d.Multiplier
	if mult < 1 {
		mult = s.cfg.Multiplier
	}
	first := max(d.FirstAttempt, 1)
	var out Outcome
	for i := 0; i < attempts; i++ {
		if i > 0 {
			delay := time.Duration(float64(s.cfg.Backoff) * math.Pow(mult, float64(i-1)))
			delay = min(delay, s.cfg.MaxDelay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				out.Error = "delivery interrupted: " + ctx.Err().Error()
				return out
			case <-t.C:
			}
		}
		a, retryable := s.attempt(ctx, d, first+i)
		out.Attempts++
		out.ResponseStatus = a.ResponseStatus
		out.Error = a.Error
		if err := s.cfg.Record(context.WithoutCancel(ctx), a); err != nil {
			s.log.Error("record callback attempt", "task", d.TaskID, "attempt", a.Attempt, "err", err)
		}
		if a.Error == "" {
			out.Delivered = true
			return out
		}
		s.log.Info("callback attempt failed", "task", d.TaskID, "attempt", a.Attempt, "status", a.ResponseStatus, "err", a.Error, "retry", retryable && i+1 < attempts)
		if !retryable {
			return out
		}
	}
	return out
}

// attempt sends once and reports whether a failure is worth retrying.
func (s *Sender) attempt(ctx context.Context, d Delivery, n int) (Attempt, bool) {
	p := d.Payload
	now := s.cfg.Clock()
	p.SentAt = now.UTC().Truncate(time.Millisecond)
	body, err := json.Marshal(p)
	a := Attempt{TaskID: d.TaskID, Attempt: n, URL: d.URL, SentAt: now, Replay: d.Replay}
	if err != nil {
		a.Error = "encode payload: " + err.Error()
		return a, false
	}
	a.RequestBody = string(body)
	actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		a.Error = "invalid callback URL"
		return a, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "baton-callback/1")
	req.Header.Set(HeaderSignature, Sign(d.Secret, body))
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	start := time.Now()
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		a.DurationMs = time.Since(start).Milliseconds()
		a.Error, a.ResponseAt = clientError(err), time.Time{}
		code := baton.ErrorCode(err)
		// A refused destination or an invalid URL will not change.
		return a, code != baton.EForbidden && code != baton.EInvalid && ctx.Err() == nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	a.ResponseAt = s.cfg.Clock()
	a.DurationMs = time.Since(start).Milliseconds()
	a.ResponseStatus, a.ResponseBody = resp.StatusCode, string(b)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return a, false
	}
	a.Error = fmt.Sprintf("receiver answered %d", resp.StatusCode)
	return a, resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout
}

// clientError is the loggable text of a transport error: the egress
// refusal's client-safe message when it is one, else the error without the
// request line Go prefixes.
func clientError(err error) string {
	var be *baton.Error
	if errors.As(err, &be) {
		return be.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	msg := err.Error()
	if i := strings.Index(msg, "\": "); i >= 0 {
		msg = msg[i+3:]
	}
	return msg
}

// Dispatcher runs deliveries in the background on a few goroutines, so that
// the outbox relay that triggers them never waits out a receiver's backoff.
// Deliveries still waiting when it stops are abandoned (the audit log
// shows the attempts made; a replay resends).
type Dispatcher struct {
	s      *Sender
	ch     chan Delivery
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// NewDispatcher starts workers goroutines (default 4) delivering through s,
// with room for queue waiting deliveries (default 1024).
func NewDispatcher(s *Sender, workers, queue int) *Dispatcher {
	if workers <= 0 {
		workers = 4
	}
	if queue <= 0 {
		queue = 1024
	}
	d := &Dispatcher{s: s, ch: make(chan Delivery, queue)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for range workers {
		d.wg.Go(func() {
			for {
				select {
				case <-d.ctx.Done():
					return
				case job := <-d.ch:
					d.s.Deliver(d.ctx, job)
				}
			}
		})
	}
	return d
}

// Submit queues a delivery; it blocks while the queue is full, until ctx ends.
func (d *Dispatcher) Submit(ctx context.Context, job Delivery) error {
	if d.ctx.Err() != nil {
		return errors.New("callback dispatcher stopped")
	}
	select {
	case d.ch <- job:
		return nil
	case <-d.ctx.Done():
		return errors.New("callback dispatcher stopped")
	case <-ctx.Done():
		return fmt.Errorf("queue callback: %w", ctx.Err())
	}
}

// Stop interrupts running deliveries and waits for the goroutines; safe to
// call twice.
func (d *Dispatcher) Stop() error {
	d.once.Do(func() {
		d.cancel()
		d.wg.Wait()
	})
	return nil
}
