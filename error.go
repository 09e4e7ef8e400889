package baton

import (
	"errors"
	"fmt"
)

// Application error codes. Only the HTTP layer maps them to status codes.
const (
	EInvalid       = "invalid"       // the request is malformed or breaks a rule (400)
	EUnauthorized  = "unauthorized"  // no or wrong credentials (401)
	EForbidden     = "forbidden"     // credentials valid but not for this (403)
	ENotFound      = "not_found"     // no such object (404)
	ELeaseLost     = "lease_lost"    // the lease token is not the current one (409)
	EConflict      = "conflict"      // the object is in a state that forbids this (409)
	EUnprocessable = "unprocessable" // e.g. idempotency key reused with another body (422)
	ETooLarge      = "too_large"     // body above the limit (413)
	EUnavailable   = "unavailable"   // a dependency is down or we are shutting down (503)
	EInternal      = "internal"      // a bug or an unexpected failure (500)
)

// Error is Baton's application error: a code the HTTP layer maps to a status,
// and a message safe to show to a client. Wrapped errors (Err) are logged but
// never shown.
type Error struct {
	Code    string
	Message string
	Err     error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the wrapped cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EInternal for
// any other non-nil error and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the client-safe message of err.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// Sentinel errors returned by stores and the controller; each is an *Error so
// that ErrorCode maps it.
var (
	ErrNotFound  = &Error{Code: ENotFound, Message: "task not found"}
	ErrLeaseLost = &Error{Code: ELeaseLost, Message: "lease token is not current"}
)
