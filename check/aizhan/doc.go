// Package aizhan is the `aizhan` step (爱站检测): the domain's Baidu rank
// (百度权重, PC and mobile) from the 爱站 apistore, up to 50 domains a call.
//
// Request: GET <base>/baidurank/siteinfos/<KEY>?domains=d1|d2|… (known,
// providers.md). Answer: {"code":200000,"status":"success","data":{"success":
// [{"domain","pc_br","m_br","ip","pc_ip","m_ip"}…],"count":N,"failed":[…]},
// "msg":"请求成功"}. Numbers may arrive as strings and traffic estimates as
// range strings ("4928466 ~ 7671300"): every number is read leniently
// (ParseRange, Number). With Config.UseHistory the sibling
// site/hisinfos/<KEY>?domains=…&type=0 (real sample in providers.md) is asked
// too and its pc_br_max / m_br_max count.
//
// The checker is a check.BatchChecker (MaxBatch 50): CheckBatch sends one
// call per 50 domains and returns verdicts in order; Check is a batch of one.
//
// Decision, per domain:
//
//	no key configured                         → retry + alert {"code":"aizhan_config"}
//	bad key (KeyErrorCodes — GUESS: the sandbox's 100002 — or HTTP 401/403)
//	                                          → retry + alert {"code":"aizhan_config"}
//	429 / 5xx / timeout (the whole call)      → retry (Retry-After honoured)
//	other non-200 / not the envelope / code ≠ 200000 → retry with msg
//	listed in data.failed / in neither list   → retry (that domain only)
//	no readable pc_br / m_br                  → retry
//	max(pc_br, m_br[, pc_br_max, m_br_max]) ≥ MinWeight (1) → pass, else reject
//
// Verified: the request and answer shapes quoted in providers.md (the
// hisinfos body is a real sample). Not verified: the siteinfos body beyond
// its field names, and what a bad key looks like (KeyErrorCodes).
package aizhan
