// Package sandbox is Baton's offline provider simulator (`baton serve
// --sandbox`): one HTTP server and one WHOIS TCP server on loopback that
// speak the real formats of every provider in providers.md, with outcomes
// decided deterministically by the domain name so end-to-end tests can
// assert every domain's path (Expect).
//
// # Endpoints
//
//	GET  /rdap/dns.json                     IANA-format RDAP bootstrap
//	GET  /rdap/domain/<name>                RDAP domain objects / 404 (TLDs com net org xyz top)
//	GET  /rdap-relay/...                    404 "No RDAP service is available" for every name (TLD info)
//	TCP  WHOIS                              Verisign / CNNIC / PIR / .xyz-style texts (every TLD; cn io co only here)
//	GET  /wayback/cdx/search/cdx            CDX API, output=json (and text), limit + showResumeKey/resumeKey paging
//	GET  /wayback/web/<ts>id_/<url>         raw snapshots, UTF-8 or GBK (declared only in <meta http-equiv>)
//	GET  /baidu/s?wd=site:<domain>          result page with the count markers / zero page / 302 to /baidu/wappass captcha
//	GET  /chinaz/single/<api>?key=&domain=  {StateCode,Reason,Result}; HTTP 431/433/531; weight field names INVENTED
//	GET  /aizhan/baidurank/siteinfos/<KEY>?domains=a|b   code 200000, data.success/failed, numbers sometimes strings
//	GET  /aizhan/site/hisinfos/<KEY>?domains=a|b&type=0  history maxima (pc_br_max, m_br_max), real sample's shape
//	POST /jucha/item/search                 SIMULATED JSON (no public API exists)
//	GET  /juzi/domain?domain=               SIMULATED HTML behind cookie juzi_session (no public API exists)
//
// # Outcome bands
//
// For each step, h = FNV-1a-32(step + "\x00" + domain) % 100 picks a band.
// A "once" failure is served to the first request of that (domain, step)
// only, tracked in memory (Reset forgets); the retry then gets the band's
// final behaviour.
//
//	register: 0–39 available (404 / WHOIS not-found) · 40–54 registered · 55–64 dropping
//	          ("pending delete","redemption period", expiry year 294247) · 65–69 reserved
//	          (server hold) · 70–77 429 once · 78–85 5xx once · 86–91 timeout once
//	          (the transient bands then answer available) · 92–99 registered
//	wayback:  0–39 clean UTF-8 site · 40–49 clean GBK site · 50–57 black: GBK gambling pages
//	          in the last two calendar years · 58–62 black: UTF-8 porn keywords in the last two
//	          years · 63–71 no history "[]" · 72–75 parked / for-sale pages · 76–81 a capture
//	          every month (CDX pages) · 82–86 429 once · 87–90 5xx once · 91–93 timeout once ·
//	          94–99 HTTP 200 empty body once (then clean)
//	baidu:    0–49 indexed · 50–69 zero results · 70–77 gambling result titles · 78–87 captcha
//	          once · 88–93 5xx once · 94–99 timeout once
//	chinaz:   0–54 weight ≥ 1 · 55–79 weight 0 · 80–87 HTTP 531 once · 88–93 5xx once · 94–99 timeout once
//	aizhan:   0–54 br ≥ 1 · 55–79 br 0 · 80–89 in "failed" once · 90–94 5xx once · 95–99 timeout once
//	jucha:    0–49 history · 50–69 empty history · 70–79 gambling title · 80–89 captcha once ·
//	          90–94 5xx once · 95–99 timeout once
//	juzi:     0–49 ok · 50–69 blocked (被墙) · 70–79 grey words · 80–89 captcha once ·
//	          90–94 5xx once · 95–99 timeout once
//
// # Markers
//
// A name containing "-<marker>-" (e.g. "shop-taken-1.com") skips the bands.
// Once-failure markers, for every step: -429-, -5xx-, -timeout-,
// -captcha- (baidu, jucha, juzi; a 429 elsewhere), -empty- (wayback; a 5xx
// elsewhere), -failed- (aizhan; a 5xx elsewhere). Final markers per step:
//
//	register: -free- -taken- -drop- -reserved-
//	wayback:  -clean- -gbk- -black- -porn- -nohist- -parked- -many-
//	baidu:    -indexed- -noindex- -black-
//	chinaz:   -weight- -noweight-
//	aizhan:   -br- -nobr-
//	jucha:    -history- -nohist- -black-
//	juzi:     -ok- -blocked- -black-
//
// A name with only a once-failure marker gets the step's good final
// behaviour (available, clean, indexed, ...). Use one final marker per step.
//
// # Register topology
//
// The bootstrap lists com, net, org, xyz, top (sandbox RDAP) and info (the
// relay that 404s everything, so the checker must fall back to WHOIS); cn, io
// and co are missing from it and answered by WHOIS only. Other TLDs have no
// source: the register check retries (Expect says retry).
//
// "timeout" failures hold the request until the client gives up (or
// Config.Hang passes, then 504), so a checker's own timeout is exercised.
package sandbox
