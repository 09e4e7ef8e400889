package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

func start(t *testing.T) *Sandbox {
	t.Helper()
	s, err := Start(context.Background(), Config{Hang: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestStartRefusesNonLoopback(t *testing.T) {
	if _, err := Start(context.Background(), Config{Addr: "0.0.0.0:0"}); err == nil {
		t.Fatal("Start on 0.0.0.0 succeeded")
	}
	s, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestPlanDeterministicAndMarkers(t *testing.T) {
	tests := []struct {
		domain, step string
		want         baton.Outcome
		trans        string
	}{
		{"a-taken-1.com", StepRegister, baton.OutcomeReject, ""},
		{"a-429-taken-1.com", StepRegister, baton.OutcomeReject, "429"},
		{"a-captcha-1.com", StepWayback, baton.OutcomePass, "429"},
		{"a-captcha-1.com", StepBaidu, baton.OutcomePass, "captcha"},
		{"a-black-1.com", StepWayback, baton.OutcomeBlackHit, ""},
		{"a-black-1.com", StepJuzi, baton.OutcomeBlackHit, ""},
		{"a-nohist-1.com", StepJucha, baton.OutcomeReject, ""},
		{"a-failed-1.com", StepAizhan, baton.OutcomePass, "failed"},
		{"a-free-1.dev", StepRegister, baton.OutcomeRetry, ""},
	}
	for _, tt := range tests {
		if got := Expect(tt.domain, tt.step); got != tt.want {
			t.Errorf("Expect(%s, %s) = %s, want %s", tt.domain, tt.step, got, tt.want)
		}
		if got := Transient(tt.domain, tt.step); got != tt.trans {
			t.Errorf("Transient(%s, %s) = %q, want %q", tt.domain, tt.step, got, tt.trans)
		}
	}
	// Bands cover 0..99 in order for every step.
	for step, bs := range bands {
		prev := uint32(0)
		for _, b := range bs {
			if b.upTo <= prev {
				t.Errorf("%s: band bounds not increasing", step)
			}
			prev = b.upTo
		}
		if prev != 100 {
			t.Errorf("%s: bands end at %d", step, prev)
		}
	}
}

func TestOtherProviders(t *testing.T) {
	s := start(t)
	ep := s.Endpoints()
	c := &http.Client{}

	t.Run("baidu", func(t *testing.T) {
		_, body := get(t, c, ep.Baidu+"/s?wd="+url.QueryEscape("site:a-indexed-1.com"))
		if !strings.Contains(body, "个网页被百度收录") || !strings.Contains(body, "找到相关结果数约") {
			t.Errorf("indexed page lacks the markers: %s", body)
		}
		_, body = get(t, c, ep.Baidu+"/s?wd="+url.QueryEscape("site:a-noindex-1.com"))
		if !strings.Contains(body, "很抱歉，没有找到与") {
			t.Errorf("zero page lacks the marker: %s", body)
		}
		resp, body := get(t, c, ep.Baidu+"/s?wd="+url.QueryEscape("site:a-captcha-1.com"))
		if !strings.Contains(resp.Request.URL.Path, "wappass") || !strings.Contains(body, "百度安全验证") {
			t.Errorf("captcha: %s %s", resp.Request.URL, body)
		}
		if _, body = get(t, c, ep.Baidu+"/s?wd="+url.QueryEscape("site:a-captcha-1.com")); !strings.Contains(body, "个网页被百度收录") {
			t.Errorf("captcha was not once: %s", body)
		}
	})
	t.Run("chinaz", func(t *testing.T) {
		for _, tt := range []struct {
			q    string
			code int
		}{
			{"domain=a-weight-1.com", 431},
			{"key=wrong&domain=a-weight-1.com", 433},
			{"key=" + ep.ChinazKey + "&domain=a-429-1.com", 531},
			{"key=" + ep.ChinazKey + "&domain=a-429-1.com", 200},
		} {
			resp, body := get(t, c, ep.Chinaz+"/single/weight?"+tt.q)
			var env struct {
				StateCode int
				Reason    string
				Result    map[string]any
			}
			if resp.StatusCode != tt.code || json.Unmarshal([]byte(body), &env) != nil {
				t.Errorf("%s: HTTP %d %s, want %d", tt.q, resp.StatusCode, body, tt.code)
			}
			if tt.code == 200 && (env.StateCode != 1 || env.Result["BaiduPcWeight"] == nil) {
				t.Errorf("success envelope %+v", env)
			}
		}
	})
	t.Run("aizhan", func(t *testing.T) {
		_, body := get(t, c, ep.Aizhan+"/baidurank/siteinfos/"+ep.AizhanKey+"?domains=a-br-1.com|a-failed-1.com|a-nobr-1.com")
		var env struct {
			Code int `json:"code"`
			Data struct {
				Success []map[string]any `json:"success"`
				Failed  []string         `json:"failed"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &env); err != nil || env.Code != 200000 || len(env.Data.Success) != 2 || len(env.Data.Failed) != 1 {
			t.Errorf("aizhan: %v %s", err, body)
		}
		_, body = get(t, c, ep.Aizhan+"/baidurank/siteinfos/wrong?domains=a.com")
		if !strings.Contains(body, `"status":"error"`) {
			t.Errorf("bad key: %s", body)
		}
	})
	t.Run("jucha", func(t *testing.T) {
		resp, err := c.PostForm(ep.Jucha+"/item/search", url.Values{"domain": {"a-black-1.com"}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"simulated":true`) || !strings.Contains(string(b), "真人下注") {
			t.Errorf("jucha: %s", b)
		}
	})
	t.Run("juzi", func(t *testing.T) {
		resp, _ := get(t, c, ep.Juzi+"/domain?domain=a-ok-1.com")
		if !strings.HasSuffix(resp.Request.URL.Path, "/juzi/login") {
			t.Errorf("no session: ended at %s", resp.Request.URL)
		}
		req, _ := http.NewRequest("GET", ep.Juzi+"/domain?domain=a-blocked-1.com", nil)
		req.AddCookie(&http.Cookie{Name: "juzi_session", Value: ep.JuziCookie})
		r2, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r2.Body)
		r2.Body.Close()
		if !strings.Contains(string(b), `data-field="blocked">是`) {
			t.Errorf("juzi blocked: %s", b)
		}
	})
	t.Run("timeout answers 504 after Hang", func(t *testing.T) {
		resp, _ := get(t, c, ep.Baidu+"/s?wd="+url.QueryEscape("site:a-timeout-1.com"))
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("HTTP %d", resp.StatusCode)
		}
	})
	t.Run("cdx text output and paging", func(t *testing.T) {
		_, body := get(t, c, ep.Wayback+"/cdx/search/cdx?url=a-many-1.com&limit=5&showResumeKey=true&from=2025&to=2026")
		lines := strings.Split(strings.TrimSpace(body), "\n")
		if len(lines) != 7 || lines[5] != "" || !strings.Contains(lines[6], "%21") {
			t.Errorf("text paging: %q", lines)
		}
	})
}
