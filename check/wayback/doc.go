// Package wayback is the `wayback` step (时光机, phase 1): did the domain have
// a real web site in the last five years, and did it ever serve black
// content (gambling, porn, ...)?
//
// It lists captures with the Wayback CDX API using the query suggested in
// providers.md
//
//	url=<domain>&matchType=host&from=<now-5y>&to=<now>&output=json
//	&fl=timestamp,original,statuscode,mimetype,digest
//	&filter=statuscode:200&filter=mimetype:text/html&collapse=timestamp:6
//
// plus limit=<PageSize>&showResumeKey=true, following resume keys (JSON: a
// header row, rows, an empty row, then [resumeKey]) for at most MaxPages
// pages. It then fetches a sample of raw snapshots
// (<base>/web/<timestamp>id_/<original>) spread across years — the newest
// year always included — decodes each by charset (Content-Type header, BOM,
// <meta charset>, <meta http-equiv>, then a GBK/UTF-8 sniff), extracts title,
// meta keywords/description and body text, and scans them with the word
// lists.
//
// Decision, in order:
//
//	CDX 429 / 5xx / timeout / connection error      → retry (Retry-After honoured)
//	CDX HTTP 200 with an empty body                  → retry (suspicious: datacenter IPs get these)
//	CDX "[]" or header only                          → Config.EmptyAnswer: reject "no history" (default) or retry
//	snapshot 429 / 5xx / timeout                     → retry
//	any sampled snapshot hits a black category       → black_hit {timestamp, url, word, category, field}
//	captures < MinCaptures or distinct years < MinYears → reject
//	any sampled snapshot hits parked / forsale       → reject with the signal
//	otherwise                                        → pass
//
// A snapshot answering 404 or another non-success status is recorded and
// skipped. The checker makes 1..MaxPages CDX requests plus SampleSize
// snapshot requests per domain: the controller's per-provider rate limit
// (Wayback allows roughly 24–60 requests a minute per IP) must count them
// all; this package does not sleep or throttle.
package wayback
