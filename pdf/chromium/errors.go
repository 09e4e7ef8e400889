package chromium

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error that Render returns for a reason of its own is
// an *Error that matches one or more of these with errors.Is; an error of the
// caller's context matches context.Canceled or context.DeadlineExceeded
// instead.
var (
	// ErrInvalid: the job or its options are invalid. Retrying cannot help.
	ErrInvalid = errors.New("chromium: invalid job")
	// ErrTimeout: the page did not finish loading (navigation, waitUntil,
	// waitForSelector) within the navigation timeout or options.timeoutMs.
	// The service marks the task "timeout".
	ErrTimeout = errors.New("chromium: page load timed out")
	// ErrNavigation: the page could not be fetched at all (DNS failure,
	// connection refused, TLS error, ...). The client-safe message names
	// Chromium's net error.
	ErrNavigation = errors.New("chromium: navigation failed")
	// ErrEgressRefused: the egress proxy refused the main document. It also
	// matches ErrNavigation.
	ErrEgressRefused = errors.New("chromium: refused by egress policy")
	// ErrStalled matches every error after which the task should be retried
	// elsewhere: ErrBrowserCrashed and ErrHung. The service marks the task
	// "stalled".
	ErrStalled = errors.New("chromium: render stalled")
	// ErrBrowserCrashed: the browser process (or the page's renderer) died
	// or the DevTools connection was lost during the render. It also
	// matches ErrStalled.
	ErrBrowserCrashed = errors.New("chromium: browser crashed")
	// ErrHung: the browser stopped answering (a setup step or the print did
	// not finish within the render timeout). It also matches ErrStalled.
	ErrHung = errors.New("chromium: browser hung")
	// ErrClosed: the pool is closed.
	ErrClosed = errors.New("chromium: pool closed")
)

// Kind is a bounded, metric-label-safe name for the class of an error.
type Kind string

// Error kinds, one per sentinel. KindCanceled is for the caller's context.
const (
	KindInvalid    Kind = "invalid"
	KindTimeout    Kind = "timeout"
	KindNavigation Kind = "navigation"
	KindRefused    Kind = "refused"
	KindCrashed    Kind = "crashed"
	KindHung       Kind = "hung"
	KindClosed     Kind = "closed"
	KindCanceled   Kind = "canceled"
	KindInternal   Kind = "internal"
)

// Error is the error Render returns. Message is safe to show to the client
// that submitted the job; Err is the cause, for logs only (it can hold
// internal details such as process ids and DevTools messages).
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is one of the sentinels that e's kind matches.
func (e *Error) Is(target error) bool {
	switch e.Kind {
	case KindInvalid:
		return target == ErrInvalid
	case KindTimeout:
		return target == ErrTimeout
	case KindNavigation:
		return target == ErrNavigation
	case KindRefused:
		return target == ErrEgressRefused || target == ErrNavigation
	case KindCrashed:
		return target == ErrBrowserCrashed || target == ErrStalled
	case KindHung:
		return target == ErrHung || target == ErrStalled
	case KindClosed:
		return target == ErrClosed
	}
	return false
}

// ErrorKind returns the kind of err: the Kind of an *Error in its chain,
// KindCanceled for a context error, "" for nil and KindInternal otherwise.
func ErrorKind(err error) Kind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// ClientMessage returns the message of err that is safe to show to a client.
func ClientMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	if ErrorKind(err) == "" {
		return ""
	}
	return "internal error"
}

func newError(kind Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: cause}
}

func invalidf(format string, args ...any) *Error {
	return newError(KindInvalid, nil, format, args...)
}
