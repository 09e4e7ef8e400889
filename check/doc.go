// Package check defines the contract between Baton's domain pipeline workers
// and the outside sources that vet a domain (RDAP/WHOIS, Baidu, chinaz,
// aizhan, the Wayback Machine, jucha, juzi).
//
// A Checker runs one pipeline step for one domain and returns a Verdict: an
// outcome (pass, reject, black_hit, retry), a short reason, and the evidence
// (what the provider said, a truncated copy of the raw answer, and the rule
// that decided). Checkers never decide what happens next in the pipeline and
// never write to a database; the controller does that with the Verdict.
//
// Outside failures — HTTP 429, 5xx, timeouts, connection errors, captcha
// pages — are never a business verdict: they become OutcomeRetry with the
// provider's Retry-After honoured. The Fetcher helper does that mapping for
// HTTP providers so each checker only interprets real answers.
//
// Checkers are constructed without side effects (no network at New), take
// their *http.Client and dialer from the caller (the egress guard lives
// there), and are safe for concurrent use. Rate limits across workers are the
// controller's job, not the checker's.
package check
