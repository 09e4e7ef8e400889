package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	baton "github.com/batonhq/baton"
)

// Body limits.
const (
	// DefaultBodyLimit bounds an ordinary JSON request body.
	DefaultBodyLimit = 1 << 20
	// BatchBodyLimit bounds batch bodies (results, task batches).
	BatchBodyLimit = 16 << 20
)

// decodeJSON reads exactly one JSON value into v from a body of at most
// limit bytes. Unknown fields, trailing data, a wrong content type and
// oversize bodies are refused with a clear *baton.Error; nothing is applied
// from a refused body.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return baton.Errorf(baton.EInvalid, "Content-Type must be application/json")
		}
	}
	return DecodeStrict(http.MaxBytesReader(w, r.Body, limit), limit, v)
}

// DecodeStrict decodes exactly one JSON value from r into v, refusing
// unknown fields and trailing data. It is the decoder every request body
// goes through (and the one the fuzz tests exercise).
func DecodeStrict(r io.Reader, limit int64, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, limit)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return baton.Errorf(baton.ETooLarge, "request body larger than %d bytes", limit)
		}
		return baton.Errorf(baton.EInvalid, "request body must hold exactly one JSON value")
	}
	return nil
}

func jsonError(err error, limit int64) error {
	var (
		syn *json.SyntaxError
		ute *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return baton.Errorf(baton.ETooLarge, "request body larger than %d bytes", limit)
	case errors.As(err, &syn):
		return baton.Errorf(baton.EInvalid, "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &ute):
		if ute.Field != "" {
			return baton.Errorf(baton.EInvalid, "field %q must be %s (got JSON %s)", ute.Field, ute.Type.String(), ute.Value)
		}
		return baton.Errorf(baton.EInvalid, "body must be a JSON %s (got %s)", ute.Type.String(), ute.Value)
	case errors.Is(err, io.EOF):
		return baton.Errorf(baton.EInvalid, "request body is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return baton.Errorf(baton.EInvalid, "malformed JSON: unexpected end of body")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return baton.Errorf(baton.EInvalid, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return baton.Errorf(baton.EInvalid, "malformed JSON: %s", truncateMsg(err.Error()))
}

func truncateMsg(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
