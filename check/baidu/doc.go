// Package baidu is the `baidu` step (百度检测): how many pages of the domain
// does Baidu index, and do the indexed pages' titles show black content?
//
// Baidu has no official API. The checker asks the web search like a
// browser — GET <base>/s?wd=site:<domain> with a desktop User-Agent,
// Accept-Language zh-CN and one cookie jar per checker — and reads the page
// by the markers public tools use (providers.md, status "partial": no full
// real page was found, so every marker is a configurable regexp):
//
//	count:   该网站共有 <b …>N</b> 个网页被百度收录      (marker "site-indexed")
//	         找到相关结果数约N个 / 百度为您找到相关结果约N个 (marker "result-count")
//	zero:    很抱歉，没有找到与 · 没有找到该URL。您可以直接访问
//	captcha: final URL on wappass.baidu.com / verify.baidu.com, <title>百度安全验证</title>,
//	         请完成验证后继续访问
//
// N may read "1234", "1,234", "12万", "1.5万" or "3亿2000万" (ParseCount).
// Result titles are the text of the <h3> elements (TitleSelector).
//
// Decision, in order:
//
//	429 / 5xx / timeout / connection error    → retry (Retry-After honoured)
//	anti-bot host or captcha marker           → retry
//	another non-200 status                    → retry
//	a result title hits a black list (GUESS in providers.md) → black_hit {title, word, category}
//	no count, zero or captcha marker          → retry (the page layout changed: fix the markers)
//	count 0 (or a zero marker)                → reject
//	count < MinIndexed                        → reject
//	otherwise                                 → pass
//
// Verified: the markers' texts as quoted in providers.md, and the sandbox's
// pages built from them. Not verified: a live Baidu page (none was fetched;
// no test contacts Baidu).
package baidu
