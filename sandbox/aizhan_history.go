package sandbox

import (
	"fmt"
	"net/http"
	"strings"
)

// aizhanHistory serves GET /aizhan/site/hisinfos/<KEY>?domains=a|b&type=0
// in the real sample's shape (providers.md): rows with pc_br, pc_br_max,
// pc_max_time, m_br, m_br_max, m_max_time. It shares the siteinfos
// once-failures (a domain's once-failure is served by whichever aizhan
// endpoint is asked first). Current ranks equal siteinfos'; a third of the
// rank-0 domains had a historical maximum of 1 (so Config.UseHistory turns
// them into passes; Expect describes the default configuration).
func (s *Sandbox) aizhanHistory(w http.ResponseWriter, r *http.Request) {
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
		pc, m, pcMax, mMax := 0, 0, 0, 0
		if p.final == fGood {
			pc, m = 1+int(h%8), int(h%6)
			pcMax, mMax = pc+int(h%3), m+int(h%2)
		} else if h%3 == 0 {
			pcMax = 1
		}
		success = append(success, map[string]any{
			"domain": d, "pc_br": pc, "pc_br_max": pcMax, "m_br": m, "m_br_max": mMax,
			"pc_max_time": fmt.Sprintf("20%02d-%02d-%02d", 15+h%10, 1+h%12, 1+h%28),
			"m_max_time":  fmt.Sprintf("20%02d-%02d-%02d", 16+h%9, 1+(h/2)%12, 1+(h/3)%28),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 200000, "status": "success",
		"data": map[string]any{"success": success, "count": len(success), "failed": failed}, "msg": "请求成功"})
}

// aizhanRequest does what both aizhan endpoints share: it checks the key
// and the domains parameter, and serves a whole-batch failure (5xx,
// timeout, 429) if any domain has one pending. ok is false when it has
// answered the request itself.
func (s *Sandbox) aizhanRequest(w http.ResponseWriter, r *http.Request) (domains []string, failures map[string]transient, ok bool) {
	if r.PathValue("key") != s.cfg.AizhanKey {
		writeJSON(w, http.StatusOK, map[string]any{"code": 100002, "status": "error", "msg": "key错误 (simulated)"})
		return nil, nil, false
	}
	for _, d := range strings.Split(r.URL.Query().Get("domains"), "|") {
		if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
			domains = append(domains, d)
		}
	}
	if len(domains) == 0 || len(domains) > 50 {
		writeJSON(w, http.StatusOK, map[string]any{"code": 100003, "status": "error", "msg": "domains 参数错误 (simulated)"})
		return nil, nil, false
	}
	failures = map[string]transient{}
	for _, d := range domains {
		failures[d] = s.failure(d, StepAizhan)
	}
	for _, t := range []transient{tTimeout, t5xx, t429} {
		for _, ft := range failures {
			if ft == t {
				s.httpFailure(w, r, t)
				return nil, nil, false
			}
		}
	}
	return domains, failures, true
}
