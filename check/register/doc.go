// Package register is the `register` step: is the domain free to register?
//
// It asks RDAP first. The RDAP server for a TLD comes from a per-TLD
// override (Config.RDAPServers) or else from the IANA bootstrap file
// (Config.BootstrapURL, cached for Config.BootstrapTTL). A TLD RDAP does not
// cover (.cn, .io, .co today), or an RDAP answer that is not evidence, falls
// back to WHOIS (TCP port 43) using Config.WHOISServers.
//
// Decision (providers.md, "register"):
//
//	RDAP 404 from the server the bootstrap/override lists      → pass (available)
//	RDAP 404 from a relay host, or "No RDAP service ..." body  → not evidence → WHOIS, else retry
//	RDAP other 4xx, malformed JSON, other object/name          → not evidence → WHOIS, else retry
//	RDAP 200 with "pending delete" / "redemption period"       → Config.DroppingOutcome (default pass), evidence dropping=true
//	RDAP 200 otherwise (registered, reserved, premium, blocked) → reject
//	WHOIS not-found line (Verisign, CNNIC, PIR, .top/.xyz)       → pass
//	WHOIS rate-limit text                                       → retry (Config.WHOISRateLimitDelay)
//	WHOIS "Domain Status:" pendingDelete / redemptionPeriod     → like RDAP dropping
//	WHOIS registered record ("Domain Name:" / "domain:" line)   → reject
//	WHOIS empty or unrecognized answer                          → retry
//	HTTP 429 / 5xx / timeouts / connection errors               → retry with Retry-After
//
// Evidence (Verdict.Data): source (rdap/whois), server, HTTP status, status
// list, events (raw dates kept; absurd dates such as year 294247 are marked
// invalid, never fatal), dropping, the rule that decided, and the raw answer
// truncated. When RDAP was not evidence, what it said is kept under
// "rdapNotEvidence".
//
// Not done: IANA WHOIS referral (whois.iana.org "refer:") for TLDs missing
// from the table — add the server to Config.WHOISServers instead; registrar
// (thick) WHOIS; per-server query syntax (DENIC's "-T dn"). The WHOIS
// registered-record heuristic is the weakest rule: providers.md documents
// only not-found and rate-limit texts.
package register
