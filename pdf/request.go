package pdf

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/pdf/chromium"
)

// Task type and lanes.
const (
	TypeRender  = "pdf.render"
	QueueFast   = "pdf.fast"
	QueueNormal = "pdf.normal"
	QueueSlow   = "pdf.slow"
)

// Limits of a request.
const (
	// DefaultMaxHTMLBytes bounds inline HTML (Config.MaxHTMLBytes).
	DefaultMaxHTMLBytes = 10 << 20
	maxURLBytes         = 8 << 10
	maxIdempotencyKey   = 255
)

// Source is what to render: a URL, or inline HTML with an optional base URL.
type Source struct {
	// Type is "url" or "html".
	Type string `json:"type"`
	// Content is the URL or the HTML document.
	Content string `json:"content"`
	// BaseURL is the http(s) URL inline HTML pretends to live at (its
	// relative links resolve against it). Only for html.
	BaseURL string `json:"baseUrl,omitempty"`
}

// CallbackSpec says where to send the signed callback.
type CallbackSpec struct {
	URL string `json:"url"`
}

// CreateRequest is the body of POST /api/tasks/pdf and POST
// /api/tasks/validate.
type CreateRequest struct {
	Source   Source          `json:"source"`
	Options  json.RawMessage `json:"options,omitempty"`
	Callback *CallbackSpec   `json:"callback,omitempty"`
	// Priority is fast, normal or slow; empty = the dry run's suggestion.
	Priority string `json:"priority,omitempty"`
}

// DecodeCreate strictly decodes a CreateRequest from r (at most limit bytes).
func DecodeCreate(r io.Reader, limit int64) (CreateRequest, error) {
	var req CreateRequest
	if err := httpapi.DecodeStrict(io.LimitReader(r, limit+1), limit, &req); err != nil {
		return CreateRequest{}, err
	}
	return req, nil
}

// Validate checks every field and returns the parsed render options. Every
// error is a *baton.Error (EInvalid, or ETooLarge for oversize HTML) whose
// message names the field.
func (r *CreateRequest) Validate(maxHTML int64) (chromium.Options, error) {
	if maxHTML <= 0 {
		maxHTML = DefaultMaxHTMLBytes
	}
	s := &r.Source
	switch s.Type {
	case "url":
		if s.Content == "" {
			return chromium.Options{}, baton.Errorf(baton.EInvalid, "source.content must hold the URL to render")
		}
		if err := checkHTTPURL(s.Content, maxURLBytes); err != nil {
			return chromium.Options{}, baton.Errorf(baton.EInvalid, "source.content %s", err)
		}
		if s.BaseURL != "" {
			return chromium.Options{}, baton.Errorf(baton.EInvalid, "source.baseUrl is only for source.type html")
		}
	case "html":
		if s.Content == "" {
			return chromium.Options{}, baton.Errorf(baton.EInvalid, "source.content must hold the HTML document")
		}
		if int64(len(s.Content)) > maxHTML {
			return chromium.Options{}, baton.Errorf(baton.ETooLarge, "source.content is larger than %d bytes", maxHTML)
		}
		if !utf8.ValidString(s.Content) {
			return chromium.Options{}, baton.Errorf(baton.EInvalid, "source.content must be UTF-8")
		}
		if s.BaseURL != "" {
			if err := checkHTTPURL(s.BaseURL, maxURLBytes); err != nil {
				return chromium.Options{}, baton.Errorf(baton.EInvalid, "source.baseUrl %s", err)
			}
		}
	case "":
		return chromium.Options{}, baton.Errorf(baton.EInvalid, "source.type is required: \"url\" or \"html\"")
	default:
		return chromium.Options{}, baton.Errorf(baton.EInvalid, "source.type must be \"url\" or \"html\" (got %q)", truncate(s.Type, 32))
	}
	var opts chromium.Options
	if len(r.Options) > 0 && string(r.Options) != "null" {
		o, err := chromium.ParseOptions(r.Options)
		if err != nil {
			return chromium.Options{}, baton.Errorf(baton.EInvalid, "%s", chromium.ClientMessage(err))
		}
		opts = o
	}
	if r.Callback != nil {
		if r.Callback.URL == "" {
			return chromium.Options{}, baton.Errorf(baton.EInvalid, "callback.url is required when callback is given")
		}
		if err := checkHTTPURL(r.Callback.URL, 2048); err != nil {
			return chromium.Options{}, baton.Errorf(baton.EInvalid, "callback.url %s", err)
		}
	}
	switch r.Priority {
	case "", "fast", "normal", "slow":
	default:
		return chromium.Options{}, baton.Errorf(baton.EInvalid, "priority must be \"fast\", \"normal\" or \"slow\" (got %q)", truncate(r.Priority, 32))
	}
	return opts, nil
}

func checkHTTPURL(s string, maxLen int) error {
	if len(s) > maxLen {
		return errors.New("is too long")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	return nil
}

// hash is the SHA-256 of the normalized request: what an Idempotency-Key is
// bound to. Options are hashed in their parsed form, so formatting and key
// order do not matter.
func (r *CreateRequest) hash(opts chromium.Options) string {
	cb := ""
	if r.Callback != nil {
		cb = r.Callback.URL
	}
	b, _ := json.Marshal(struct {
		Source   Source           `json:"s"`
		Options  chromium.Options `json:"o"`
		Callback string           `json:"c"`
		Priority string           `json:"p"`
	}{r.Source, opts, cb, r.Priority})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkIdempotencyKey validates the header value.
func checkIdempotencyKey(k string) error {
	if len(k) > maxIdempotencyKey || strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return baton.Errorf(baton.EInvalid, "header Idempotency-Key must be at most %d printable characters", maxIdempotencyKey)
	}
	return nil
}

// ReplayRequest is the body of POST /api/tasks/{id}/callback/replay.
type ReplayRequest struct {
	// Attempts, 1 to 10; default 1.
	Attempts int `json:"attempts"`
	// BackoffMultiplier, 1 to 10; default 2.
	BackoffMultiplier float64 `json:"backoffMultiplier"`
}

// Validate fills defaults and checks the ranges.
func (r *ReplayRequest) Validate() error {
	if r.Attempts == 0 {
		r.Attempts = 1
	}
	if r.BackoffMultiplier == 0 {
		r.BackoffMultiplier = 2
	}
	if r.Attempts < 1 || r.Attempts > 10 {
		return baton.Errorf(baton.EInvalid, "attempts must be between 1 and 10")
	}
	if !(r.BackoffMultiplier >= 1 && r.BackoffMultiplier <= 10) {
		return baton.Errorf(baton.EInvalid, "backoffMultiplier must be between 1 and 10")
	}
	return nil
}

// payload is the queue task's payload: what a worker needs to render.
type payload struct {
	// ConversionID is the client's task id (the queue task of a render
	// moved to pdf.slow is <id>-slow).
	ConversionID string           `json:"conversionId"`
	Source       Source           `json:"source"`
	Options      chromium.Options `json:"options"`
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
