package chromium

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
)

// Paper formats accepted by Options.Format, in inches (portrait).
var paperFormats = map[string][2]float64{
	"A3":      {11.69, 16.54},
	"A4":      {8.27, 11.69},
	"A5":      {5.83, 8.27},
	"LETTER":  {8.5, 11},
	"LEGAL":   {8.5, 14},
	"TABLOID": {11, 17},
}

// Limits enforced by Validate.
const (
	maxTemplateBytes  = 64 << 10
	maxSelectorBytes  = 1 << 10
	maxUserAgentBytes = 1 << 10
	maxHeaders        = 64
	maxHeaderBytes    = 8 << 10
	maxCookies        = 100
	maxCookieBytes    = 4 << 10
	maxWaitDelayMs    = 60_000
	maxTimeoutMs      = 600_000
	maxPaperInches    = 200
)

// Length is a CSS length used for paper sizes and margins. In JSON it is a
// string with a unit — "210mm", "21cm", "8.5in", "800px" — or a bare number,
// which is CSS pixels (96 px = 1 in), as in Puppeteer.
type Length string

// UnmarshalJSON accepts a JSON string or number.
func (l *Length) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = Length(s)
		return nil
	}
	var f json.Number
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("a length must be a string such as \"10mm\" or a number of pixels")
	}
	*l = Length(f.String())
	return nil
}

// Inches converts l to inches. The empty Length is 0.
func (l Length) Inches() (float64, error) {
	s := strings.TrimSpace(strings.ToLower(string(l)))
	if s == "" {
		return 0, nil
	}
	factor := 1.0 / 96 // px
	for _, u := range []struct {
		suffix string
		factor float64
	}{{"px", 1.0 / 96}, {"in", 1}, {"cm", 1 / 2.54}, {"mm", 1 / 25.4}} {
		if strings.HasSuffix(s, u.suffix) {
			s, factor = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.factor
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a length (use px, in, cm or mm)", string(l))
	}
	return v * factor, nil
}

// Margin holds the four page margins. An empty side takes the default of
// 1cm (Chromium's own default).
type Margin struct {
	Top    Length `json:"top,omitempty"`
	Right  Length `json:"right,omitempty"`
	Bottom Length `json:"bottom,omitempty"`
	Left   Length `json:"left,omitempty"`
}

// Cookie is a cookie set in the task's fresh browser context before the page
// is loaded. Domain defaults to the host of the page URL (or BaseURL).
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain,omitempty"`
	Path     string  `json:"path,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	HTTPOnly bool    `json:"httpOnly,omitempty"`
	SameSite string  `json:"sameSite,omitempty"` // Strict, Lax or None
	Expires  float64 `json:"expires,omitempty"`  // Unix seconds; 0 = session cookie
}

// Wait conditions for Options.WaitUntil.
const (
	WaitLoad        = "load"        // the load event of the main document
	WaitNetworkIdle = "networkidle" // load, then no network activity for 500 ms
)

// Options are the render options of SPEC §6. The zero value is valid and
// means: A4 portrait, 1cm margins, no background, scale 1, all pages, no
// header or footer, wait for the load event, print media, the pool's
// timeouts, Chromium's user agent.
type Options struct {
	// Format is a paper format: A3, A4, A5, Letter, Legal or Tabloid (case
	// insensitive). Default A4 when Width and Height are empty. Not
	// allowed together with Width/Height.
	Format string `json:"format,omitempty"`
	// Width and Height set a custom paper size; both or neither.
	Width  Length `json:"width,omitempty"`
	Height Length `json:"height,omitempty"`
	// Landscape swaps width and height.
	Landscape bool `json:"landscape,omitempty"`
	// Margin sets the page margins (default 1cm each).
	Margin *Margin `json:"margin,omitempty"`
	// PrintBackground prints background colors and images.
	PrintBackground bool `json:"printBackground,omitempty"`
	// Scale is the rendering scale, 0.1 to 2. 0 means 1.
	Scale float64 `json:"scale,omitempty"`
	// PageRanges selects pages, e.g. "1-3, 5". Empty means all. A range
	// that selects no page fails the render with ErrInvalid.
	PageRanges string `json:"pageRanges,omitempty"`
	// HeaderTemplate and FooterTemplate are HTML printed on every page
	// (classes date, title, url, pageNumber, totalPages). Setting either
	// turns on displayHeaderFooter; the other then prints empty.
	HeaderTemplate string `json:"headerTemplate,omitempty"`
	FooterTemplate string `json:"footerTemplate,omitempty"`
	// PreferCSSPageSize uses the page's CSS @page size when it has one.
	PreferCSSPageSize bool `json:"preferCSSPageSize,omitempty"`
	// WaitUntil is "load" (default) or "networkidle".
	WaitUntil string `json:"waitUntil,omitempty"`
	// WaitForSelector waits, after WaitUntil, until a CSS selector matches.
	WaitForSelector string `json:"waitForSelector,omitempty"`
	// WaitDelayMs waits this long after everything else, before printing
	// (0 to 60000).
	WaitDelayMs int `json:"waitDelayMs,omitempty"`
	// EmulateMedia is "print" (default) or "screen".
	EmulateMedia string `json:"emulateMedia,omitempty"`
	// TimeoutMs is the budget of the whole render (1 to 600000). 0 means
	// the pool's NavigationTimeout + RenderTimeout. The navigation phase
	// never gets more than the pool's NavigationTimeout.
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// UserAgent overrides the User-Agent header and navigator.userAgent.
	UserAgent string `json:"userAgent,omitempty"`
	// ExtraHTTPHeaders are sent with every request of the page. Hop-by-hop
	// headers, Host and Proxy-* are refused.
	ExtraHTTPHeaders map[string]string `json:"extraHttpHeaders,omitempty"`
	// Cookies are set before the page loads.
	Cookies []Cookie `json:"cookies,omitempty"`
}

// ParseOptions decodes options JSON strictly (unknown fields are errors) and
// validates the result. Every error matches ErrInvalid.
func ParseOptions(data []byte) (Options, error) {
	var o Options
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Options{}, invalidf("options: %s", jsonErrorText(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Options{}, invalidf("options: trailing data after the JSON object")
	}
	if err := o.Validate(); err != nil {
		return Options{}, err
	}
	return o, nil
}

// jsonErrorText keeps decoder errors short and free of Go type names.
func jsonErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("options.%s has the wrong type", te.Field)
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

var (
	pageRangesRE = regexp.MustCompile(`^\s*\d{1,6}(\s*-\s*\d{1,6})?(\s*,\s*\d{1,6}(\s*-\s*\d{1,6})?)*\s*$`)
	tokenRE      = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// forbiddenHeaders may not be set through ExtraHTTPHeaders: they are
// hop-by-hop, describe the connection, or would reach the egress proxy
// (Proxy-Authorization would let a client borrow another session).
var forbiddenHeaders = map[string]bool{
	"host": true, "connection": true, "content-length": true, "transfer-encoding": true,
	"upgrade": true, "keep-alive": true, "te": true, "trailer": true, "expect": true,
}

// Validate checks every field and returns an error matching ErrInvalid whose
// message names the first bad field, e.g. "options.scale must be between 0.1
// and 2".
func (o *Options) Validate() error {
	if o.Format != "" {
		if _, ok := paperFormats[strings.ToUpper(o.Format)]; !ok {
			return invalidf("options.format must be one of A3, A4, A5, Letter, Legal, Tabloid")
		}
		if o.Width != "" || o.Height != "" {
			return invalidf("options.format cannot be combined with options.width/height")
		}
	}
	if (o.Width == "") != (o.Height == "") {
		return invalidf("options.width and options.height must be set together")
	}
	for _, f := range []struct {
		name string
		l    Length
	}{{"width", o.Width}, {"height", o.Height}} {
		if f.l == "" {
			continue
		}
		v, err := f.l.Inches()
		if err != nil {
			return invalidf("options.%s: %v", f.name, err)
		}
		if v <= 0 || v > maxPaperInches {
			return invalidf("options.%s must be greater than 0 and at most %d inches", f.name, maxPaperInches)
		}
	}
	w, h, err := o.paper()
	if err != nil {
		return err
	}
	if o.Margin != nil {
		m := o.Margin
		for _, f := range []struct {
			name string
			l    Length
		}{{"top", m.Top}, {"right", m.Right}, {"bottom", m.Bottom}, {"left", m.Left}} {
			v, err := f.l.Inches()
			if err != nil {
				return invalidf("options.margin.%s: %v", f.name, err)
			}
			if v < 0 {
				return invalidf("options.margin.%s must not be negative", f.name)
			}
		}
	}
	if t, r, b, l := o.margins(); t+b >= h || l+r >= w {
		return invalidf("options.margin leaves no printable area on the page (margins default to 1cm)")
	}
	if o.Scale != 0 && (o.Scale < 0.1 || o.Scale > 2 || math.IsNaN(o.Scale)) {
		return invalidf("options.scale must be between 0.1 and 2")
	}
	if o.PageRanges != "" {
		if !pageRangesRE.MatchString(o.PageRanges) {
			return invalidf("options.pageRanges must look like \"1-5, 8, 11-13\"")
		}
		for _, part := range strings.Split(o.PageRanges, ",") {
			ends := strings.Split(part, "-")
			first, _ := strconv.Atoi(strings.TrimSpace(ends[0]))
			last := first
			if len(ends) == 2 {
				last, _ = strconv.Atoi(strings.TrimSpace(ends[1]))
			}
			if first < 1 || last < first {
				return invalidf("options.pageRanges: pages start at 1 and a range must not end before it starts")
			}
		}
	}
	if len(o.HeaderTemplate) > maxTemplateBytes {
		return invalidf("options.headerTemplate is longer than %d bytes", maxTemplateBytes)
	}
	if len(o.FooterTemplate) > maxTemplateBytes {
		return invalidf("options.footerTemplate is longer than %d bytes", maxTemplateBytes)
	}
	switch o.WaitUntil {
	case "", WaitLoad, WaitNetworkIdle:
	default:
		return invalidf("options.waitUntil must be \"load\" or \"networkidle\"")
	}
	if len(o.WaitForSelector) > maxSelectorBytes {
		return invalidf("options.waitForSelector is longer than %d bytes", maxSelectorBytes)
	}
	if o.WaitDelayMs < 0 || o.WaitDelayMs > maxWaitDelayMs {
		return invalidf("options.waitDelayMs must be between 0 and %d", maxWaitDelayMs)
	}
	switch o.EmulateMedia {
	case "", "print", "screen":
	default:
		return invalidf("options.emulateMedia must be \"print\" or \"screen\"")
	}
	if o.TimeoutMs < 0 || o.TimeoutMs > maxTimeoutMs {
		return invalidf("options.timeoutMs must be between 0 and %d", maxTimeoutMs)
	}
	if o.TimeoutMs > 0 && o.WaitDelayMs >= o.TimeoutMs {
		return invalidf("options.waitDelayMs must be less than options.timeoutMs")
	}
	if len(o.UserAgent) > maxUserAgentBytes || strings.ContainsAny(o.UserAgent, "\r\n\x00") {
		return invalidf("options.userAgent must be at most %d bytes on one line", maxUserAgentBytes)
	}
	if len(o.ExtraHTTPHeaders) > maxHeaders {
		return invalidf("options.extraHttpHeaders has more than %d headers", maxHeaders)
	}
	for name, value := range o.ExtraHTTPHeaders {
		lower := strings.ToLower(name)
		if !tokenRE.MatchString(name) {
			return invalidf("options.extraHttpHeaders: %q is not a valid header name", truncate(name, 64))
		}
		if forbiddenHeaders[lower] || strings.HasPrefix(lower, "proxy-") {
			return invalidf("options.extraHttpHeaders: header %q may not be set", name)
		}
		if len(value) > maxHeaderBytes || strings.ContainsAny(value, "\r\n\x00") {
			return invalidf("options.extraHttpHeaders: the value of %q must be at most %d bytes on one line", name, maxHeaderBytes)
		}
	}
	if len(o.Cookies) > maxCookies {
		return invalidf("options.cookies has more than %d cookies", maxCookies)
	}
	for i, c := range o.Cookies {
		if c.Name == "" || !tokenRE.MatchString(c.Name) {
			return invalidf("options.cookies[%d].name must be a non-empty token", i)
		}
		if len(c.Name)+len(c.Value) > maxCookieBytes || strings.ContainsAny(c.Value, ";\r\n\x00") {
			return invalidf("options.cookies[%d].value must be at most %d bytes without ';' or line breaks", i, maxCookieBytes)
		}
		if c.Domain != "" && (len(c.Domain) > 253 || strings.ContainsAny(c.Domain, " /;:\r\n\x00")) {
			return invalidf("options.cookies[%d].domain is not a host name", i)
		}
		if c.Path != "" && (!strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, ";\r\n\x00") || len(c.Path) > 1024) {
			return invalidf("options.cookies[%d].path must start with /", i)
		}
		switch c.SameSite {
		case "", "Strict", "Lax", "None":
		default:
			return invalidf("options.cookies[%d].sameSite must be Strict, Lax or None", i)
		}
		if c.Expires < 0 || math.IsNaN(c.Expires) || math.IsInf(c.Expires, 0) {
			return invalidf("options.cookies[%d].expires must be Unix seconds", i)
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// paper returns the paper size in inches, portrait, before Landscape.
func (o *Options) paper() (w, h float64, err error) {
	if o.Width != "" {
		w, err = o.Width.Inches()
		if err != nil {
			return 0, 0, invalidf("options.width: %v", err)
		}
		h, err = o.Height.Inches()
		if err != nil {
			return 0, 0, invalidf("options.height: %v", err)
		}
		return w, h, nil
	}
	f := strings.ToUpper(o.Format)
	if f == "" {
		f = "A4"
	}
	size := paperFormats[f]
	return size[0], size[1], nil
}

// margins returns top, right, bottom, left in inches; defaults are 1cm.
func (o *Options) margins() (t, r, b, l float64) {
	const def = 1 / 2.54
	get := func(x Length) float64 {
		if x == "" {
			return def
		}
		v, _ := x.Inches()
		return v
	}
	if o.Margin == nil {
		return def, def, def, def
	}
	return get(o.Margin.Top), get(o.Margin.Right), get(o.Margin.Bottom), get(o.Margin.Left)
}

// printParams builds Page.printToPDF parameters. o must be valid.
func (o *Options) printParams() page.PrintToPDFParams {
	w, h, _ := o.paper()
	t, r, b, l := o.margins()
	p := page.PrintToPDFParams{
		Landscape:         &o.Landscape,
		PrintBackground:   &o.PrintBackground,
		Scale:             o.Scale,
		PaperWidth:        w,
		PaperHeight:       h,
		MarginTop:         &t,
		MarginRight:       &r,
		MarginBottom:      &b,
		MarginLeft:        &l,
		PageRanges:        o.PageRanges,
		PreferCSSPageSize: &o.PreferCSSPageSize,
		TransferMode:      page.PrintToPDFTransferModeReturnAsStream,
	}
	if p.Scale == 0 {
		p.Scale = 1
	}
	if o.HeaderTemplate != "" || o.FooterTemplate != "" {
		on := true
		p.DisplayHeaderFooter = &on
		// An empty template would print Chromium's default header or
		// footer (date, title, URL); print nothing instead.
		p.HeaderTemplate, p.FooterTemplate = o.HeaderTemplate, o.FooterTemplate
		if p.HeaderTemplate == "" {
			p.HeaderTemplate = "<span></span>"
		}
		if p.FooterTemplate == "" {
			p.FooterTemplate = "<span></span>"
		}
	}
	return p
}

// cookieParams converts the cookies; pageURL is used for cookies without a
// domain.
func (o *Options) cookieParams(pageURL string) []*network.CookieParam {
	out := make([]*network.CookieParam, 0, len(o.Cookies))
	for _, c := range o.Cookies {
		p := &network.CookieParam{
			Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: network.CookieSameSite(c.SameSite),
		}
		if c.Domain == "" {
			p.URL = pageURL
		}
		if c.Expires > 0 {
			p.Expires = cdp.TimeSinceEpoch(c.Expires)
		}
		out = append(out, p)
	}
	return out
}

// headerParams converts the extra headers.
func (o *Options) headerParams() network.Headers {
	h := make(network.Headers, len(o.ExtraHTTPHeaders))
	for k, v := range o.ExtraHTTPHeaders {
		h[http.CanonicalHeaderKey(k)] = v
	}
	return h
}
