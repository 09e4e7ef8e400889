package pipeline

import (
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/httpapi"
)

// Alert is a problem an operator must fix (a provider key refused, a login
// expired), raised by a check through an "alert" object in its result data:
// {"alert":{"code":"chinaz_config","message":"..."}}. Such results are
// retries, so without the alert the problem would only show as a queue that
// never drains.
type Alert struct {
	Code      string    `json:"code"`
	Message   string    `json:"message"`
	Step      string    `json:"step"`
	Domain    string    `json:"domain"`
	Count     int64     `json:"count"`
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
}

// Alerts keeps the open alerts of this controller, by code.
type Alerts struct {
	mu sync.Mutex
	m  map[string]*Alert
}

// NewAlerts returns an empty alert list.
func NewAlerts() *Alerts { return &Alerts{m: map[string]*Alert{}} }

// observe records the alert in a result's data, if any.
func (a *Alerts) observe(step, domain string, data json.RawMessage, now time.Time) {
	if len(data) == 0 || a == nil {
		return
	}
	var d struct {
		Alert *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"alert"`
	}
	if json.Unmarshal(data, &d) != nil || d.Alert == nil || d.Alert.Code == "" {
		return
	}
	code := d.Alert.Code
	if len(code) > 64 {
		code = code[:64]
	}
	msg := d.Alert.Message
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	al, ok := a.m[code]
	if !ok {
		if len(a.m) >= 256 {
			return
		}
		al = &Alert{Code: code, FirstSeen: now}
		a.m[code] = al
	}
	al.Message, al.Step, al.Domain, al.LastSeen = msg, step, domain, now
	al.Count++
}

// List returns the open alerts, most recent first.
func (a *Alerts) List() []Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Alert, 0, len(a.m))
	for _, al := range a.m {
		out = append(out, *al)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastSeen.After(out[j].LastSeen) })
	return out
}

// Ack removes an alert (the operator fixed it); false when unknown.
func (a *Alerts) Ack(code string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.m[code]
	delete(a.m, code)
	return ok
}

func (s *Service) listAlerts(w http.ResponseWriter, r *http.Request) error {
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"alerts": s.alerts.List()})
	return nil
}

func (s *Service) ackAlert(w http.ResponseWriter, r *http.Request) error {
	if !s.alerts.Ack(r.PathValue("code")) {
		return baton.Errorf(baton.ENotFound, "no open alert %q", r.PathValue("code"))
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}
