package wayback

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Capture is one CDX row.
type Capture struct {
	Timestamp  string `json:"timestamp"`
	Original   string `json:"original"`
	StatusCode string `json:"statuscode,omitempty"`
	MimeType   string `json:"mimetype,omitempty"`
	Digest     string `json:"digest,omitempty"`
}

// Year returns the capture's year (0 if the timestamp is malformed).
func (c Capture) Year() int {
	if len(c.Timestamp) < 4 {
		return 0
	}
	y, _ := strconv.Atoi(c.Timestamp[:4])
	return y
}

// CDXPage is one parsed CDX JSON answer.
type CDXPage struct {
	// Header is the field-name row ("timestamp", "original", ...).
	Header []string
	// Captures are the data rows with a valid timestamp and URL.
	Captures []Capture
	// Skipped counts malformed rows.
	Skipped int
	// ResumeKey is the key for the next page ("" on the last page).
	ResumeKey string
}

// Errors of ParseCDX.
var (
	// ErrEmptyBody: the body is empty (not even "[]"). Not evidence.
	ErrEmptyBody = errors.New("wayback: empty CDX body")
	// ErrMalformedCDX: the body is not CDX JSON.
	ErrMalformedCDX = errors.New("wayback: malformed CDX JSON")
)

const maxCDXRows = 100000

// ParseCDX parses CDX output=json: a header row, data rows, and when paging
// an empty row followed by a one-element row holding the resume key. "[]"
// parses as a page with no captures. Values are strings in the real API;
// numbers are tolerated.
func ParseCDX(body []byte) (*CDXPage, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, ErrEmptyBody
	}
	var rows [][]json.RawMessage
	if err := json.Unmarshal(body, &rows); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedCDX, err)
	}
	page := &CDXPage{}
	if len(rows) == 0 {
		return page, nil
	}
	if len(rows) > maxCDXRows {
		return nil, fmt.Errorf("%w: %d rows", ErrMalformedCDX, len(rows))
	}
	header, err := stringsOf(rows[0])
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrMalformedCDX, err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[h] = i
	}
	its, ok1 := idx["timestamp"]
	iorig, ok2 := idx["original"]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: header %q lacks timestamp/original", ErrMalformedCDX, header)
	}
	page.Header = header
	field := func(row []string, name string) string {
		if i, ok := idx[name]; ok && i < len(row) {
			return row[i]
		}
		return ""
	}
	for i := 1; i < len(rows); i++ {
		if len(rows[i]) == 0 {
			// Empty row: the next row holds the resume key.
			if i+1 < len(rows) {
				if k, err := stringsOf(rows[i+1]); err == nil && len(k) == 1 {
					page.ResumeKey = k[0]
				}
			}
			break
		}
		row, err := stringsOf(rows[i])
		if err != nil || len(row) != len(header) || !validTimestamp(row[its]) || row[iorig] == "" {
			page.Skipped++
			continue
		}
		page.Captures = append(page.Captures, Capture{
			Timestamp:  row[its],
			Original:   row[iorig],
			StatusCode: field(row, "statuscode"),
			MimeType:   field(row, "mimetype"),
			Digest:     field(row, "digest"),
		})
	}
	return page, nil
}

func stringsOf(raw []json.RawMessage) ([]string, error) {
	out := make([]string, len(raw))
	for i, r := range raw {
		var s string
		if err := json.Unmarshal(r, &s); err == nil {
			out[i] = s
			continue
		}
		var n json.Number
		if err := json.Unmarshal(r, &n); err == nil {
			out[i] = n.String()
			continue
		}
		return nil, fmt.Errorf("value %d is neither string nor number", i)
	}
	return out, nil
}

// validTimestamp accepts 4..14 digits (yyyy[MM[dd[hh[mm[ss]]]]]).
func validTimestamp(ts string) bool {
	if len(ts) < 4 || len(ts) > 14 {
		return false
	}
	return strings.Trim(ts, "0123456789") == ""
}
