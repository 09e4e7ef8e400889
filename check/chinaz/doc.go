// Package chinaz is the `chinaz` step (站长检测): the domain's Baidu weight
// (百度权重) according to the 站长之家 (chinaz) data API.
//
// Request: GET <base>/single/<API>?key=KEY&domain=<domain>. What is known
// (providers.md, status "partial"): the envelope
// {"StateCode":1,"Reason":"成功","Result":{...}} and the HTTP codes 431 (key
// missing), 433 (bad key), 436 (quota), 437 (IP not whitelisted), 531 (too
// frequent), 532 (unknown). UNKNOWN: the weight endpoint's path (Config.API,
// no default) and the weight field's name (Config.WeightPaths, read with
// httpcheck.Path; the default "Result.BaiduPcWeight" /
// "Result.BaiduMobileWeight" is the sandbox's invented shape — a GUESS to be
// replaced by the real field once seen).
//
// Decision, in order:
//
//	no Key / no API configured               → retry + alert {"code":"chinaz_config"}
//	HTTP (or StateCode) 431 / 433 / 437      → retry + alert {"code":"chinaz_config"}
//	HTTP 404                                 → retry + alert (wrong API path)
//	436 quota                                → retry (Retry-After, else QuotaDelay 1h)
//	429 / 531 too frequent                   → retry (Retry-After, else RateLimitedDelay 1m)
//	5xx / 532 / timeout / connection error   → retry (Retry-After honoured)
//	not the envelope, StateCode ≠ 1          → retry with the Reason
//	no number at any WeightPaths             → retry + alert (fix weightPaths)
//	max weight ≥ MinWeight (1)               → pass, else reject
//
// An alert is the object {"code":"chinaz_config","message":"<what to fix>"}
// under "alert" in the verdict's data; the controller shows it to the
// operator. The key never appears in evidence, errors or logs (redacted).
package chinaz
