package sandbox

import (
	"crypto/sha1"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/encoding/simplifiedchinese"
)

type capture struct{ ts, original string }

// captures lists the simulated captures of domain within [from, to]
// (14-digit timestamps), at most one a month (collapse=timestamp:6), ascending.
func (s *Sandbox) captures(domain, from, to string) []capture {
	p := planFor(domain, StepWayback)
	if p.final == fNoHistory {
		return nil
	}
	fromT, err1 := time.Parse("20060102150405", from)
	toT, err2 := time.Parse("20060102150405", to)
	if err1 != nil || err2 != nil || toT.Before(fromT) {
		return nil
	}
	from, to = fromT.Format("20060102150405"), toT.Format("20060102150405")
	var out []capture
	origins := []string{"http://" + domain + "/", "http://www." + domain + "/", "https://www." + domain + "/"}
	for m := time.Date(fromT.Year(), fromT.Month(), 1, 0, 0, 0, 0, time.UTC); !m.After(toT); m = m.AddDate(0, 1, 0) {
		h := bucket(domain, m.Format("200601"))
		last := m.Year() == toT.Year() && m.Month() == toT.Month()
		if p.final != fMany && !last && h%4 != 0 {
			continue
		}
		ts := m.Add(time.Duration(h%(24*27)) * time.Hour).Add(time.Duration(h%3600) * time.Second)
		if last {
			ts = m // the month of "to" always has a capture, never after "to"
		}
		st := ts.Format("20060102150405")
		if st < from || st > to {
			continue
		}
		out = append(out, capture{ts: st, original: origins[h%uint32(len(origins))]})
	}
	return out
}

// parseBound reads a 1–14 digit CDX timestamp as the start (upper=false) or
// the end (upper=true) of the period it names: "2021" is 2021-01-01 00:00:00
// or 2021-12-31 23:59:59.
func parseBound(ts string, upper bool) (time.Time, bool) {
	if ts == "" || len(ts) > 14 || strings.Trim(ts, "0123456789") != "" {
		return time.Time{}, false
	}
	if len(ts) < 4 {
		ts += strings.Repeat("0", 4-len(ts))
	}
	num := func(i, j, def int) int {
		if len(ts) < j {
			return def
		}
		n, _ := strconv.Atoi(ts[i:j])
		return n
	}
	y, mo, d := num(0, 4, 0), max(num(4, 6, 1), 1), max(num(6, 8, 1), 1)
	h, mi, se := num(8, 10, 0), num(10, 12, 0), num(12, 14, 0)
	t := time.Date(y, time.Month(min(mo, 12)), min(d, 31), min(h, 23), min(mi, 59), min(se, 59), 0, time.UTC)
	if !upper {
		return t, true
	}
	switch len(ts) {
	case 4:
		t = t.AddDate(1, 0, 0)
	case 5, 6:
		t = t.AddDate(0, 1, 0)
	case 7, 8:
		t = t.AddDate(0, 0, 1)
	case 9, 10:
		t = t.Add(time.Hour)
	case 11, 12:
		t = t.Add(time.Minute)
	default:
		t = t.Add(time.Second)
	}
	return t.Add(-time.Second), true
}

func urlkey(domain string) string {
	labels := strings.Split(domain, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ",") + ")/"
}

// cdx serves the CDX server API (output=json or the space-separated text
// format) for the parameters Baton uses: url, from, to, fl, limit,
// showResumeKey, resumeKey. filter and collapse are accepted; the simulated
// captures already are 200 text/html, one a month.
func (s *Sandbox) cdx(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	domain := strings.ToLower(strings.TrimSuffix(q.Get("url"), "."))
	domain = strings.TrimPrefix(strings.TrimPrefix(domain, "http://"), "https://")
	domain = strings.TrimSuffix(strings.TrimPrefix(domain, "www."), "/")
	if domain == "" {
		http.Error(w, "Request must include url", http.StatusBadRequest)
		return
	}
	switch s.failure(domain, StepWayback) {
	case tEmpty:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return
	case t429, t5xx, tTimeout, tCaptcha:
		s.httpFailure(w, r, planFor(domain, StepWayback).trans)
		return
	}
	now := s.cfg.Now().UTC()
	fromT, toT := time.Date(1996, 1, 1, 0, 0, 0, 0, time.UTC), now
	var ok1, ok2 = true, true
	if v := q.Get("from"); v != "" {
		fromT, ok1 = parseBound(v, false)
	}
	if v := q.Get("to"); v != "" {
		toT, ok2 = parseBound(v, true)
	}
	if !ok1 || !ok2 {
		http.Error(w, "bad from/to", http.StatusBadRequest)
		return
	}
	if toT.After(now) {
		toT = now
	}
	from, to := fromT.Format("20060102150405"), toT.Format("20060102150405")
	caps := s.captures(domain, from, to)
	if rk := q.Get("resumeKey"); rk != "" {
		after := resumeTS(rk)
		i := sort.Search(len(caps), func(i int) bool { return caps[i].ts > after })
		caps = caps[i:]
	}
	limit := s.cfg.CDXPageSize
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 && l < limit {
		limit = l
	}
	more := len(caps) > limit
	if more {
		caps = caps[:limit]
	}
	fl := strings.Split(q.Get("fl"), ",")
	if q.Get("fl") == "" {
		fl = []string{"urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"}
	}
	row := func(c capture) []string {
		out := make([]string, len(fl))
		for i, f := range fl {
			switch f {
			case "urlkey":
				out[i] = urlkey(domain)
			case "timestamp":
				out[i] = c.ts
			case "original":
				out[i] = c.original
			case "mimetype":
				out[i] = "text/html"
			case "statuscode":
				out[i] = "200"
			case "digest":
				sum := sha1.Sum([]byte(domain + c.ts))
				out[i] = base32.StdEncoding.EncodeToString(sum[:])
			case "length":
				out[i] = strconv.Itoa(int(1000 + bucket(domain, c.ts)*37))
			}
		}
		return out
	}
	var key string
	if more && q.Get("showResumeKey") == "true" {
		key = url.QueryEscape(urlkey(domain) + " " + caps[len(caps)-1].ts + "!")
	}
	if q.Get("output") != "json" {
		w.Header().Set("Content-Type", "text/plain")
		for _, c := range caps {
			fmt.Fprintln(w, strings.Join(row(c), " "))
		}
		if key != "" {
			fmt.Fprintf(w, "\n%s\n", key)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if len(caps) == 0 {
		io.WriteString(w, "[]\n")
		return
	}
	rows := [][]string{fl}
	for _, c := range caps {
		rows = append(rows, row(c))
	}
	if key != "" {
		rows = append(rows, []string{}, []string{key})
	}
	// One row a line, as the real server writes it.
	io.WriteString(w, "[")
	for i, rw := range rows {
		b, _ := json.Marshal(rw)
		if i > 0 {
			io.WriteString(w, ",\n")
		}
		w.Write(b)
	}
	io.WriteString(w, "]\n")
}

// resumeTS extracts the timestamp from a resume key "urlkey ts!" (escaped).
func resumeTS(key string) string {
	if k, err := url.QueryUnescape(key); err == nil {
		key = k
	}
	if i := strings.LastIndexByte(key, ' '); i >= 0 {
		key = key[i+1:]
	}
	return strings.TrimSuffix(key, "!")
}

// snapshot serves /wayback/web/<ts>id_/<original> raw bytes.
func (s *Sandbox) snapshot(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/wayback/web/")
	ts, original, ok := strings.Cut(rest, "id_/")
	if _, valid := parseBound(ts, false); !ok || !valid || len(ts) < 4 {
		http.NotFound(w, r)
		return
	}
	if r.URL.RawQuery != "" {
		original += "?" + r.URL.RawQuery
	}
	// A path-cleaning proxy may have turned "http://" into "http:/".
	for _, sch := range []string{"http:/", "https:/"} {
		if strings.HasPrefix(original, sch) && !strings.HasPrefix(original, sch+"/") {
			original = sch + "/" + original[len(sch):]
		}
	}
	u, err := url.Parse(original)
	if err != nil || u.Host == "" {
		http.NotFound(w, r)
		return
	}
	domain := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	year, _ := strconv.Atoi(ts[:4])
	recent := year >= s.cfg.Now().UTC().Year()-1
	p := planFor(domain, StepWayback)
	title, keywords, body := "某某科技有限公司 - 官方网站", "软件开发,技术咨询,"+domain, "欢迎访问 "+domain+"。我们提供专业的软件开发与技术咨询服务。Welcome to our company."
	gbk := false
	switch p.final {
	case fGBK:
		gbk = true
	case fBlack:
		gbk = true
		if recent {
			title, keywords = "皇冠体育(中国)官方网站", "真人下注,体育彩票,快三"
			body = "官网登录入口 真人下注 体育彩票 快三 注册送彩金"
		}
	case fPorn:
		if recent {
			keywords = "无码,人妻,三级"
			body = "在线观看 无码 高清"
		}
	case fParked:
		title, keywords = domain, ""
		body = "This domain is parked free, courtesy of the registrar. 域名出售 联系我们. Related Searches: business, hosting."
	}
	page := fmt.Sprintf("<!DOCTYPE html>\n<html>\n<head>\n%s\n<title>%s</title>\n<meta name=\"keywords\" content=\"%s\">\n"+
		"<meta name=\"description\" content=\"%s 官方网站\">\n<script>var _hmt = _hmt || []; /* 体育彩票 in a script is not text */</script>\n"+
		"</head>\n<body>\n<div class=\"main\"><p>%s</p></div>\n<!-- simulated by the baton sandbox, capture %s -->\n</body>\n</html>\n",
		"%META%", title, keywords, domain, body, ts)
	if gbk {
		page = strings.Replace(page, "%META%", `<meta http-equiv="Content-Type" content="text/html; charset=gb2312">`, 1)
		enc, err := simplifiedchinese.GBK.NewEncoder().String(page)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, enc)
		return
	}
	page = strings.Replace(page, "%META%", `<meta charset="utf-8">`, 1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, page)
}
