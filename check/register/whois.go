package register

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// WHOISState is what a WHOIS answer says about a name.
type WHOISState string

// WHOIS answer states.
const (
	WHOISAvailable    WHOISState = "available"
	WHOISRegistered   WHOISState = "registered"
	WHOISRateLimited  WHOISState = "rate_limited"
	WHOISUnrecognized WHOISState = "unrecognized"
)

// WHOISAnswer is a parsed WHOIS answer.
type WHOISAnswer struct {
	// State is the classification.
	State WHOISState `json:"state"`
	// Line is the line that decided (the not-found or rate-limit line, or
	// the first domain-name line).
	Line string `json:"line,omitempty"`
	// Status lists the "Domain Status:" values (first word of each).
	Status []string `json:"status,omitempty"`
}

// Default WHOIS answer patterns (providers.md). Matching is case-insensitive;
// not-found patterns must start a line, rate-limit patterns may appear anywhere
// in a line.
var (
	DefaultWHOISNotFound = []string{
		`No match for "`,                     // Verisign (.com/.net)
		`No matching record.`,                // CNNIC (.cn)
		`Domain not found.`,                  // PIR (.org)
		`The queried object does not exist:`, // .top / .xyz
	}
	DefaultWHOISRateLimited = []string{
		`limit exceeded`,
		`quota exceeded`,
		`exceeded your query limit`,
	}
)

// ParseWHOIS classifies a WHOIS answer. notFound and rateLimited are the
// patterns (nil = the defaults).
func ParseWHOIS(text string, notFound, rateLimited []string) WHOISAnswer {
	if notFound == nil {
		notFound = DefaultWHOISNotFound
	}
	if rateLimited == nil {
		rateLimited = DefaultWHOISRateLimited
	}
	var ans WHOISAnswer
	var nameLine, limitLine string
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(strings.TrimRight(raw, "\r"))
		if line == "" {
			continue
		}
		low := strings.ToLower(line)
		for _, p := range notFound {
			if strings.HasPrefix(low, strings.ToLower(p)) {
				return WHOISAnswer{State: WHOISAvailable, Line: line}
			}
		}
		if limitLine == "" {
			for _, p := range rateLimited {
				if strings.Contains(low, strings.ToLower(p)) {
					limitLine = line
				}
			}
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		switch key {
		case "domain name", "domain", "domainname":
			if nameLine == "" && val != "" {
				nameLine = line
			}
		case "domain status", "status":
			if f := strings.Fields(val); len(f) > 0 && len(ans.Status) < 32 {
				ans.Status = append(ans.Status, f[0])
			}
		}
	}
	switch {
	case nameLine != "":
		ans.State, ans.Line = WHOISRegistered, nameLine
	case limitLine != "":
		ans.State, ans.Line = WHOISRateLimited, limitLine
	default:
		ans.State = WHOISUnrecognized
	}
	return ans
}

// errWHOISTooLarge marks an answer cut at the size cap (kept, not fatal).
var errWHOISTooLarge = errors.New("whois answer exceeds size cap")

// queryWHOIS sends name to addr (host:port) and reads the answer to EOF,
// at most maxBytes, within timeout.
func queryWHOIS(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error),
	addr, name string, maxBytes int, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("whois dial %s: %w", addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("whois deadline: %w", err)
	}
	// Close the connection when ctx ends so a cancelled worker does not wait
	// for the deadline.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(conn, name+"\r\n"); err != nil {
		return nil, fmt.Errorf("whois write to %s: %w", addr, err)
	}
	buf, err := io.ReadAll(io.LimitReader(conn, int64(maxBytes)+1))
	if err != nil {
		return buf, fmt.Errorf("whois read from %s: %w", addr, err)
	}
	if len(buf) > maxBytes {
		return buf[:maxBytes], errWHOISTooLarge
	}
	return buf, nil
}
