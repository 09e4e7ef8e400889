// Package juzi is the `juzi` step (桔子检测): is the domain blocked in China
// (被墙), do its titles or grey-word column show black content, is the site
// old enough?
//
// NO PUBLIC API WAS VERIFIED. juzi (seo.juziseo.com) has no public API,
// only logged-in HTML pages (providers.md). This step is therefore a
// configurable HTTP adapter (package httpcheck): an operator with an account
// sets the page URL, the session cookie and the selectors, with no code
// change.
//
// The defaults describe the baton SANDBOX's invented page, not juzi's:
//
//	GET <endpoint>?domain=<domain>     Cookie: juzi_session=…
//	<table class="jz-info">
//	  <tr><th>被墙</th><td data-field="blocked">是|否</td></tr>
//	  <tr><th>建站年数</th><td data-field="age">7</td></tr>
//	  <tr><th>灰词</th><td data-field="grey">…</td></tr> …
//	</table><ul class="jz-titles"><li>title</li>…</ul>
//	no session → 302 to /login; captcha page: <title>安全验证</title> 请输入验证码
//
// Endpoint has no default: until it is set every check retries with the
// alert {"code":"juzi_config"}. An expired session (a redirect to a login
// page, a login form, 401/403) retries with the alert {"code":"juzi_auth"}
// so the operator renews Cookie.
//
// Decision, in order (httpcheck rules named in the evidence):
//
//	429 / 5xx / timeout                         → retry (Retry-After honoured)
//	login page                                  → retry + alert {"code":"juzi_auth"}
//	captcha marker                              → retry
//	other non-2xx / unparsable                  → retry
//	a title or the grey-word text hits a black list → black_hit {field, text, word, category}
//	a flag in RejectFlags (default "blocked") is set → reject
//	parked / forsale words                      → reject
//	site age (建站年数) < MinYears (1)           → reject
//	otherwise                                   → pass
package juzi
