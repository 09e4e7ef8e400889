package sandbox

import (
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/batonhq/baton"
)

// Steps the sandbox simulates.
const (
	StepRegister = "register"
	StepBaidu    = "baidu"
	StepChinaz   = "chinaz"
	StepAizhan   = "aizhan"
	StepWayback  = "wayback"
	StepJucha    = "jucha"
	StepJuzi     = "juzi"
)

// transient is a failure served once per (domain, step).
type transient string

const (
	tNone    transient = ""
	t429     transient = "429"
	t5xx     transient = "5xx"
	tTimeout transient = "timeout"
	tCaptcha transient = "captcha" // baidu, jucha, juzi; 429 elsewhere
	tEmpty   transient = "empty"   // wayback: HTTP 200 with an empty body
	tFailed  transient = "failed"  // aizhan: the domain in "failed"
)

// Final behaviours (after any transient failure).
const (
	fAvailable  = "available"  // register
	fRegistered = "registered" // register
	fDropping   = "dropping"   // register: pending delete + redemption period
	fReserved   = "reserved"   // register: server hold
	fClean      = "clean"      // wayback: UTF-8 site
	fGBK        = "gbk"        // wayback: GBK site, clean
	fBlack      = "black"      // wayback (GBK gambling), baidu/jucha/juzi (gambling titles)
	fPorn       = "porn"       // wayback: UTF-8 porn keywords
	fNoHistory  = "nohist"     // wayback "[]", jucha empty history
	fParked     = "parked"     // wayback: parking / for-sale page
	fMany       = "many"       // wayback: a capture every month (paged)
	fGood       = "good"       // baidu indexed, chinaz weight, aizhan br, jucha history, juzi ok
	fBad        = "bad"        // baidu 0, chinaz/aizhan 0, juzi blocked
)

type band struct {
	upTo  uint32 // exclusive upper bound of h%100
	trans transient
	final string
}

// bands per step; h = FNV-1a(step + "\x00" + domain) % 100. Keep doc.go in sync.
var bands = map[string][]band{
	StepRegister: {
		{40, tNone, fAvailable}, {55, tNone, fRegistered}, {65, tNone, fDropping}, {70, tNone, fReserved},
		{78, t429, fAvailable}, {86, t5xx, fAvailable}, {92, tTimeout, fAvailable}, {100, tNone, fRegistered},
	},
	StepWayback: {
		{40, tNone, fClean}, {50, tNone, fGBK}, {58, tNone, fBlack}, {63, tNone, fPorn}, {72, tNone, fNoHistory},
		{76, tNone, fParked}, {82, tNone, fMany}, {87, t429, fClean}, {91, t5xx, fClean}, {94, tTimeout, fClean},
		{100, tEmpty, fClean},
	},
	StepBaidu: {
		{50, tNone, fGood}, {70, tNone, fBad}, {78, tNone, fBlack}, {88, tCaptcha, fGood}, {94, t5xx, fGood}, {100, tTimeout, fGood},
	},
	StepChinaz: {
		{55, tNone, fGood}, {80, tNone, fBad}, {88, t429, fGood}, {94, t5xx, fGood}, {100, tTimeout, fGood},
	},
	StepAizhan: {
		{55, tNone, fGood}, {80, tNone, fBad}, {90, tFailed, fGood}, {95, t5xx, fGood}, {100, tTimeout, fGood},
	},
	StepJucha: {
		{50, tNone, fGood}, {70, tNone, fNoHistory}, {80, tNone, fBlack}, {90, tCaptcha, fGood}, {95, t5xx, fGood}, {100, tTimeout, fGood},
	},
	StepJuzi: {
		{50, tNone, fGood}, {70, tNone, fBad}, {80, tNone, fBlack}, {90, tCaptcha, fGood}, {95, t5xx, fGood}, {100, tTimeout, fGood},
	},
}

// markers in a domain name override the bands: "-<marker>-" anywhere in it.
var transientMarkers = map[string]transient{
	"429": t429, "5xx": t5xx, "timeout": tTimeout, "captcha": tCaptcha, "empty": tEmpty, "failed": tFailed,
}

var finalMarkers = map[string]map[string]string{
	StepRegister: {"free": fAvailable, "taken": fRegistered, "drop": fDropping, "reserved": fReserved},
	StepWayback: {"clean": fClean, "gbk": fGBK, "black": fBlack, "porn": fPorn, "nohist": fNoHistory,
		"parked": fParked, "many": fMany},
	StepBaidu:  {"indexed": fGood, "noindex": fBad, "black": fBlack},
	StepChinaz: {"weight": fGood, "noweight": fBad},
	StepAizhan: {"br": fGood, "nobr": fBad},
	StepJucha:  {"history": fGood, "nohist": fNoHistory, "black": fBlack},
	StepJuzi:   {"ok": fGood, "blocked": fBad, "black": fBlack},
}

// defaultFinal is the final behaviour when markers name only a transient.
var defaultFinal = map[string]string{
	StepRegister: fAvailable, StepWayback: fClean, StepBaidu: fGood, StepChinaz: fGood,
	StepAizhan: fGood, StepJucha: fGood, StepJuzi: fGood,
}

type plan struct {
	trans transient
	final string
}

func bucket(domain, step string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(step))
	h.Write([]byte{0})
	h.Write([]byte(domain))
	return h.Sum32() % 100
}

func hasMarker(domain, m string) bool { return strings.Contains(domain, "-"+m+"-") }

// planFor decides what the sandbox does for (domain, step).
func planFor(domain, step string) plan {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	var p plan
	marked := false
	// Sorted so a name with two markers of a kind behaves the same every time.
	for _, m := range slices.Sorted(maps.Keys(transientMarkers)) {
		if hasMarker(domain, m) {
			p.trans, marked = transientMarkers[m], true
		}
	}
	for _, m := range slices.Sorted(maps.Keys(finalMarkers[step])) {
		if hasMarker(domain, m) {
			p.final, marked = finalMarkers[step][m], true
		}
	}
	if marked {
		if p.final == "" {
			p.final = defaultFinal[step]
		}
		p.trans = normalizeTransient(step, p.trans)
		return p
	}
	h := bucket(domain, step)
	for _, b := range bands[step] {
		if h < b.upTo {
			return plan{trans: b.trans, final: b.final}
		}
	}
	return plan{final: defaultFinal[step]}
}

// normalizeTransient maps a marker to what the step's provider can show:
// a captcha where the provider has none is a 429; an empty body is
// wayback's; "failed" is aizhan's (a 5xx elsewhere).
func normalizeTransient(step string, t transient) transient {
	switch t {
	case tCaptcha:
		if step != StepBaidu && step != StepJucha && step != StepJuzi {
			return t429
		}
	case tEmpty:
		if step != StepWayback {
			return t5xx
		}
	case tFailed:
		if step != StepAizhan {
			return t5xx
		}
	}
	return t
}

// tldRole says how the sandbox serves a TLD for the register step.
type tldRole int

const (
	tldUnknown tldRole = iota
	tldRDAP            // listed in the bootstrap, served by the sandbox RDAP server
	tldRelay           // listed in the bootstrap, but the server 404s everything; WHOIS answers
	tldWHOIS           // missing from the bootstrap; WHOIS answers
)

var tldRoles = map[string]tldRole{
	"com": tldRDAP, "net": tldRDAP, "org": tldRDAP, "xyz": tldRDAP, "top": tldRDAP,
	"info": tldRelay,
	"cn":   tldWHOIS, "io": tldWHOIS, "co": tldWHOIS,
}

// TLDs are the TLDs the sandbox answers for in the register step.
func TLDs() []string {
	return []string{"com", "net", "org", "xyz", "top", "info", "cn", "io", "co"}
}

func tldOf(domain string) string {
	if i := strings.LastIndexByte(domain, '.'); i >= 0 {
		return domain[i+1:]
	}
	return ""
}

// Expect returns the final outcome a checker with default configuration
// reaches for domain at step against the sandbox, once its "once" failures
// have been retried. For register a TLD the sandbox does not serve (see TLDs)
// stays retry. For baidu, chinaz, aizhan, jucha and juzi it is the outcome
// of the default thresholds: count/weight/rank/site age ≥ 1 passes, 0 (or
// 被墙) rejects, black-list words black_hit (aizhan without UseHistory).
func Expect(domain, step string) baton.Outcome {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	p := planFor(domain, step)
	switch step {
	case StepRegister:
		if tldRoles[tldOf(domain)] == tldUnknown {
			return baton.OutcomeRetry
		}
		switch p.final {
		case fAvailable, fDropping:
			return baton.OutcomePass
		}
		return baton.OutcomeReject
	case StepWayback:
		switch p.final {
		case fBlack, fPorn:
			return baton.OutcomeBlackHit
		case fNoHistory, fParked:
			return baton.OutcomeReject
		}
		return baton.OutcomePass
	}
	switch p.final {
	case fBlack:
		return baton.OutcomeBlackHit
	case fBad, fNoHistory:
		return baton.OutcomeReject
	}
	return baton.OutcomePass
}

// Transient returns the once-failure the sandbox serves for (domain, step):
// "" (none), "429", "5xx", "timeout", "captcha", "empty" or "failed".
func Transient(domain, step string) string {
	return string(planFor(strings.ToLower(domain), step).trans)
}
