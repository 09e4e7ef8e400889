package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	baton "github.com/batonhq/baton"
)

// ErrorBody is the JSON every error answer carries.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a machine-readable code and a human message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// StatusOf maps an application error code to its HTTP status. This is the
// only place that knows the mapping.
func StatusOf(code string) int {
	switch code {
	case baton.EInvalid:
		return http.StatusBadRequest
	case baton.EUnauthorized:
		return http.StatusUnauthorized
	case baton.EForbidden:
		return http.StatusForbidden
	case baton.ENotFound:
		return http.StatusNotFound
	case baton.ELeaseLost, baton.EConflict:
		return http.StatusConflict
	case baton.EUnprocessable:
		return http.StatusUnprocessableEntity
	case baton.ETooLarge:
		return http.StatusRequestEntityTooLarge
	case baton.EUnavailable:
		return http.StatusServiceUnavailable
	case "method_not_allowed":
		return http.StatusMethodNotAllowed
	}
	return http.StatusInternalServerError
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers err as JSON. Internal and unavailable errors are logged
// with their cause; the client sees only the safe message.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := baton.ErrorCode(err)
	status := StatusOf(code)
	if status >= 500 && log != nil {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	msg := baton.ErrorMessage(err)
	var be *baton.Error
	if !errors.As(err, &be) {
		msg = "internal error"
	}
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
}
