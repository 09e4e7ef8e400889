package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Simulated data for the steps whose checkers come later. baidu, chinaz
// and aizhan follow the formats known from providers.md; jucha and juzi have
// no public API, so their shapes here are Baton's invention and every answer
// says "simulated".

func formatCount(n uint32, style uint32) string {
	switch style % 3 {
	case 0:
		return fmt.Sprint(n)
	case 1:
		if n >= 1000 {
			return fmt.Sprintf("%d,%03d", n/1000, n%1000)
		}
		return fmt.Sprint(n)
	}
	if n >= 10000 {
		return fmt.Sprintf("%d万", n/10000)
	}
	return fmt.Sprint(n)
}

// baidu serves GET /baidu/s?wd=site:<domain>: a result page with the
// count markers, the zero-result page, or (once) a redirect to the captcha page.
func (s *Sandbox) baidu(w http.ResponseWriter, r *http.Request) {
	wd := strings.TrimSpace(r.URL.Query().Get("wd"))
	domain, ok := strings.CutPrefix(strings.ToLower(wd), "site:")
	if !ok || domain == "" {
		http.Error(w, "sandbox baidu expects wd=site:<domain>", http.StatusBadRequest)
		return
	}
	t := s.failure(domain, StepBaidu)
	if t == tCaptcha {
		http.Redirect(w, r, "/baidu/wappass?tpl=wise&u="+url.QueryEscape(r.URL.String()), http.StatusFound)
		return
	}
	if s.httpFailure(w, r, t) {
		return
	}
	p := planFor(domain, StepBaidu)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	head := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>site:` + domain + `_百度搜索</title></head><body><div id="content_left">`
	if p.final == fBad {
		io.WriteString(w, head+`<div class="content_none"><div class="nors"><p>很抱歉，没有找到与<span style="font-family:宋体">“</span><em>site:`+domain+
			`</em><span style="font-family:宋体">”</span>相关的网页。</p><p>没有找到该URL。您可以直接访问 <a href="http://`+domain+`">`+domain+`</a></p></div></div></div></body></html>`)
		return
	}
	h := bucket(domain, "baidu-count")
	n := 1 + h*137%50000
	titles := []string{domain + " - 某某科技有限公司", "关于我们 - " + domain, "联系我们 - " + domain}
	if p.final == fBlack {
		titles = []string{"皇冠体育(中国)官方网站-真人下注", "体育彩票 快三 官网登录入口", domain}
	}
	var b strings.Builder
	b.WriteString(head)
	fmt.Fprintf(&b, `<div class="c-container"><div class="op_site_domain_right"><p>该网站共有 <b style="color:#333">%s</b> 个网页被百度收录</p></div></div>`, formatCount(n, h))
	fmt.Fprintf(&b, `<div class="nums"><span class="nums_text">百度为您找到相关结果约%s个</span></div><div class="hint">找到相关结果数约%s个</div>`, formatCount(n, h), formatCount(n, h))
	for i, t := range titles {
		fmt.Fprintf(&b, `<div class="result c-container" id="%d"><h3 class="t"><a href="http://www.baidu.com/link?url=sbx%d" target="_blank">%s</a></h3></div>`, i+1, i, t)
	}
	b.WriteString(`</div><!-- simulated by the baton sandbox --></body></html>`)
	io.WriteString(w, b.String())
}

func (s *Sandbox) baiduCaptcha(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, `<!DOCTYPE html><html><head><meta charset="utf-8"><title>百度安全验证</title></head><body><div class="passMod_dialog-body"><p class="passMod_dialog-title">百度安全验证</p><p>网络不给力，请稍后重试</p><p>请完成验证后继续访问</p></div><!-- simulated captcha (real host: wappass.baidu.com) --></body></html>`)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// chinaz serves GET /chinaz/single/<api>?key=KEY&domain=<domain> with the
// real envelope {StateCode, Reason, Result} and the documented HTTP codes
// 431 (key missing), 433 (bad key), 531 (too frequent, served as the "429"
// once-failure). The weight field names in Result are invented: the real
// ones are unknown (providers.md), so the checker must take an extraction path.
func (s *Sandbox) chinaz(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch key := q.Get("key"); {
	case key == "":
		writeJSON(w, 431, map[string]any{"StateCode": 431, "Reason": "缺少key参数 (simulated)", "Result": nil})
		return
	case key != s.cfg.ChinazKey:
		writeJSON(w, 433, map[string]any{"StateCode": 433, "Reason": "key错误 (simulated)", "Result": nil})
		return
	}
	domain := strings.ToLower(q.Get("domain"))
	if domain == "" {
		writeJSON(w, http.StatusOK, map[string]any{"StateCode": 0, "Reason": "参数错误", "Result": nil})
		return
	}
	switch t := s.failure(domain, StepChinaz); t {
	case t429:
		writeJSON(w, 531, map[string]any{"StateCode": 531, "Reason": "请求过于频繁 (simulated)", "Result": nil})
		return
	default:
		if s.httpFailure(w, r, t) {
			return
		}
	}
	p := planFor(domain, StepChinaz)
	pc, m := 0, 0
	if p.final == fGood {
		h := bucket(domain, "chinaz-weight")
		pc, m = 1+int(h%9), int(h%7)
	}
	writeJSON(w, http.StatusOK, map[string]any{"StateCode": 1, "Reason": "成功", "Result": map[string]any{
		"Domain": domain, "BaiduPcWeight": pc, "BaiduMobileWeight": m, "Simulated": true,
	}})
}

// aizhan serves GET /aizhan/baidurank/siteinfos/<KEY>?domains=a|b with the
// real envelope (code 200000, data.success / data.failed). Numbers arrive as
// strings for some domains and ip as a range string, as providers.md warns.
// The error body for a bad key is invented.
func (s *Sandbox) aizhan(w http.ResponseWriter, r *http.Request) {
	domains, failures, ok := s.aizhanRequest(w, r)
	if !ok {
		return
	}
	success := []map[string]any{}
	failed := []string{}
	for _, d := range domains {
		if failures[d] == tFailed {
			failed = append(failed, d)
			continue
		}
		p := planFor(d, StepAizhan)
		h := bucket(d, "aizhan")
		pc, m := 0, 0
		if p.final == fGood {
			pc, m = 1+int(h%8), int(h%6)
		}
		row := map[string]any{"domain": d, "pc_br": pc, "m_br": m,
			"ip": fmt.Sprintf("%d ~ %d", h*4928, h*7671+100), "pc_ip": fmt.Sprintf("%d ~ %d", h*3000, h*5000+10), "m_ip": fmt.Sprint(h * 1700)}
		if h%2 == 0 {
			row["pc_br"], row["m_br"] = fmt.Sprint(pc), fmt.Sprint(m)
		}
		success = append(success, row)
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 200000, "status": "success",
		"data": map[string]any{"success": success, "count": len(success), "failed": failed}, "msg": "请求成功"})
}

// jucha serves POST /jucha/item/search (form domain=...). SIMULATED FORMAT:
// jucha has no public API; field names bt (title), yy (language) follow what
// public scrapers show, the rest is invented.
func (s *Sandbox) jucha(w http.ResponseWriter, r *http.Request) {
	domain := strings.ToLower(strings.TrimSpace(r.PostFormValue("domain")))
	if domain == "" {
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "domain required", "simulated": true})
		return
	}
	t := s.failure(domain, StepJucha)
	if t == tCaptcha {
		writeJSON(w, http.StatusOK, map[string]any{"code": -2, "msg": "请完成滑块验证", "captcha": true, "simulated": true})
		return
	}
	if s.httpFailure(w, r, t) {
		return
	}
	p := planFor(domain, StepJucha)
	history := []map[string]string{}
	if p.final != fNoHistory {
		year := s.cfg.Now().UTC().Year()
		for i := range 4 {
			bt := fmt.Sprintf("%s - 某某网络科技有限公司", domain)
			if p.final == fBlack && i == 0 {
				bt = "皇冠体育(中国)官方网站-真人下注"
			}
			history = append(history, map[string]string{"bt": bt, "yy": "zh", "ts": fmt.Sprintf("%d0615", year-i)})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 1, "msg": "ok", "simulated": true, "data": map[string]any{
		"domain": domain, "history": history, "nianshu": len(history), "lianxu": len(history), "zhongwen": len(history),
	}})
}

// juzi serves GET /juzi/domain?domain=... to a logged-in session. SIMULATED
// FORMAT: juzi has no public API; this HTML table is Baton's invention.
func (s *Sandbox) juzi(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie("juzi_session"); err != nil || c.Value != s.cfg.JuziCookie {
		http.Redirect(w, r, "/juzi/login", http.StatusFound)
		return
	}
	domain := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("domain")))
	t := s.failure(domain, StepJuzi)
	if t == tCaptcha {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!DOCTYPE html><html><head><title>安全验证</title></head><body><div class="jz-captcha">请输入验证码</div><!-- simulated --></body></html>`)
		return
	}
	if s.httpFailure(w, r, t) {
		return
	}
	p := planFor(domain, StepJuzi)
	blocked, grey := "否", ""
	titles := []string{domain + " - 某某科技", "首页 - " + domain}
	switch p.final {
	case fBad:
		blocked = "是"
	case fBlack:
		grey = "真人下注"
		titles = []string{"皇冠体育(中国)官方网站", domain}
	}
	h := bucket(domain, "juzi")
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>` + domain + ` - 桔子SEO (simulated)</title></head><body><table class="jz-info">`)
	fmt.Fprintf(&b, `<tr><th>被墙</th><td data-field="blocked">%s</td></tr><tr><th>建站年数</th><td data-field="age">%d</td></tr>`, blocked, 1+h%12)
	fmt.Fprintf(&b, `<tr><th>5年稳定性</th><td data-field="stable5">%s</td></tr><tr><th>百度收录</th><td data-field="baidu">%d</td></tr>`, map[bool]string{true: "是", false: "否"}[h%2 == 0], h*13)
	fmt.Fprintf(&b, `<tr><th>灰词</th><td data-field="grey">%s</td></tr></table><ul class="jz-titles">`, grey)
	for _, t := range titles {
		b.WriteString("<li>" + t + "</li>")
	}
	b.WriteString(`</ul><!-- simulated by the baton sandbox --></body></html>`)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, b.String())
}

func (s *Sandbox) juziLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, `<!DOCTYPE html><html><head><title>登录 - 桔子SEO (simulated)</title></head><body><form class="jz-login" method="post"><input name="user"><input name="pass" type="password"></form></body></html>`)
}
