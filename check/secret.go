package check

import (
	"encoding/json"
	"log/slog"
)

// Secret is a credential (an API key, a cookie). It prints, marshals and
// logs as "[REDACTED]"; only Reveal gives the value. It unmarshals from JSON
// like a plain string so it can be read from configuration.
type Secret string

const redacted = "[REDACTED]"

// Reveal returns the secret value, for building the request that needs it.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer with the value hidden ("" stays "").
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString hides the value from %#v.
func (s Secret) GoString() string { return `check.Secret("` + s.String() + `")` }

// MarshalJSON hides the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText hides the value (used by encoders that prefer text).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the value (configuration files and flags).
func (s *Secret) UnmarshalText(b []byte) error { *s = Secret(b); return nil }

// LogValue implements slog.LogValuer with the value hidden.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
