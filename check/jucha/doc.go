// Package jucha is the `jucha` step (聚查检测): does the domain's title
// history (建站历史) show black content, and is the site old enough?
//
// NO PUBLIC API WAS VERIFIED. jucha has no documented API: public scrapers
// post to http://www.jucha.com/item/search and to token-gated history
// backends whose token needs a slider captcha (providers.md). This step is
// therefore a configurable HTTP adapter (package httpcheck): an operator
// with access sets the endpoint, method, headers / cookie / token and the
// extraction paths, with no code change.
//
// The defaults describe the baton SANDBOX's invented shape, not jucha's:
//
//	POST <endpoint>   form domain=<domain>
//	{"code":1,"msg":"ok","simulated":true,"data":{"domain":"…",
//	  "history":[{"bt":"<title>","yy":"zh","ts":"20260615"},…],
//	  "nianshu":4,"lianxu":4,"zhongwen":4}}
//	{"code":-2,"msg":"请完成滑块验证","captcha":true}            (captcha)
//
// Only the history field names bt (title) and yy (language) come from what
// public scrapers show; everything else is a guess. Endpoint has no default:
// until it is set every check retries with the alert
// {"code":"jucha_config"} in its data.
//
// Decision, in order (httpcheck rules named in the evidence):
//
//	429 / 5xx / timeout                         → retry (Retry-After honoured)
//	login page (Login / LoginURL / 401 / 403)   → retry + alert {"code":"jucha_auth"}
//	captcha marker (Captcha)                    → retry
//	other non-2xx, unparsable answer, code ≠ 1  → retry
//	NotFound marker                             → reject
//	a history title hits a black list           → black_hit {title, word, category, timestamp}
//	a flag in RejectFlags is set                → reject
//	a title hits parked / forsale               → reject
//	site age (data.nianshu) < MinYears (1)      → reject
//	otherwise                                   → pass
package jucha
