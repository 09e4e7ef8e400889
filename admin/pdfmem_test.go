package admin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/admin"
)

// memPDF is an in-memory admin.PDFBackend: a stand-in for Baton's own PDF
// service (being built) so the PDF pages can be driven end to end now.
type memPDF struct {
	mu        sync.Mutex
	tasks     map[string]admin.PDFTask
	callbacks map[string][]admin.CallbackAttempt
	keys      []admin.APIKeyInfo
	replays   []admin.ReplayRequest
	nextKey   int
}

var _ admin.PDFBackend = (*memPDF)(nil)

func newMemPDF(now time.Time) *memPDF {
	m := &memPDF{tasks: map[string]admin.PDFTask{}, callbacks: map[string][]admin.CallbackAttempt{}}
	m.keys = []admin.APIKeyInfo{{ID: "key_01", Name: "invoices-prod", CreatedAt: now.Add(-48 * time.Hour)}}
	add := func(t admin.PDFTask) { m.tasks[t.ID] = t }
	add(admin.PDFTask{ID: "01JDPDF0000000000000000001", Status: baton.StateCompleted, Queue: "pdf.fast", KeyID: "key_01",
		KeyName: "invoices-prod", SourceType: "url", Source: "https://example.com/invoice/2026-11-0042",
		Options:     []byte(`{"format":"A4","landscape":false,"margin":{"top":"1cm","bottom":"1cm"},"printBackground":true,"waitUntil":"networkidle"}`),
		CallbackURL: "https://hooks.example.com/pdf-done", Attempts: 1, ResultSize: 48213,
		CreatedAt: now.Add(-10 * time.Minute), StartedAt: now.Add(-10*time.Minute + 300*time.Millisecond),
		FinishedAt: now.Add(-10*time.Minute + 2100*time.Millisecond)})
	add(admin.PDFTask{ID: "01JDPDF0000000000000000002", Status: baton.StateFailed, Queue: "pdf.slow", KeyID: "key_01",
		KeyName: "invoices-prod", SourceType: "url", Source: "http://169.254.169.254/latest/meta-data/", Attempts: 1,
		Error: "egress refused: 169.254.169.254 is link-local", CreatedAt: now.Add(-6 * time.Minute),
		StartedAt: now.Add(-6 * time.Minute), FinishedAt: now.Add(-6*time.Minute + 20*time.Millisecond)})
	add(admin.PDFTask{ID: "01JDPDF0000000000000000003", Status: baton.StatePending, Queue: "pdf.normal", SourceType: "html",
		Source: "<h1>月度报告</h1><p>…</p>", CreatedAt: now.Add(-30 * time.Second)})
	sent := now.Add(-10*time.Minute + 2200*time.Millisecond)
	body := `{"taskId":"01JDPDF0000000000000000001","status":"completed","resultUrl":"/api/tasks/01JDPDF0000000000000000001/result","error":"","finishedAt":"...","sentAt":"..."}`
	m.callbacks["01JDPDF0000000000000000001"] = []admin.CallbackAttempt{
		{Attempt: 1, URL: "https://hooks.example.com/pdf-done", RequestBody: body, ResponseStatus: 502, ResponseBody: "bad gateway",
			SentAt: sent, DurationMs: 310, Error: "HTTP 502"},
		{Attempt: 2, URL: "https://hooks.example.com/pdf-done", RequestBody: body, ResponseStatus: 200, ResponseBody: "ok",
			SentAt: sent.Add(2 * time.Second), DurationMs: 95},
	}
	return m
}

func (m *memPDF) ListTasks(_ context.Context, f admin.PDFTaskFilter) ([]admin.PDFTask, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []admin.PDFTask
	for _, t := range m.tasks {
		if (f.Status == "" || t.Status == f.Status) && (f.Queue == "" || t.Queue == f.Queue) &&
			(f.KeyID == "" || t.KeyID == f.KeyID) && strings.HasPrefix(t.ID, f.IDPrefix) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, "", nil
}

func (m *memPDF) Task(_ context.Context, id string) (admin.PDFTask, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return t, baton.Errorf(baton.ENotFound, "task not found")
	}
	return t, nil
}

func (m *memPDF) Result(ctx context.Context, id string) (io.ReadCloser, error) {
	t, err := m.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	if t.Status != baton.StateCompleted {
		return nil, baton.Errorf(baton.EConflict, "task %s has no result", id)
	}
	return io.NopCloser(bytes.NewReader([]byte("%PDF-1.7\n%fake\n"))), nil
}

func (m *memPDF) Callbacks(_ context.Context, id string) ([]admin.CallbackAttempt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tasks[id]; !ok {
		return nil, baton.Errorf(baton.ENotFound, "task not found")
	}
	return append([]admin.CallbackAttempt(nil), m.callbacks[id]...), nil
}

func (m *memPDF) ReplayCallback(_ context.Context, id string, req admin.ReplayRequest) (admin.ReplayOutcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return admin.ReplayOutcome{}, baton.Errorf(baton.ENotFound, "task not found")
	}
	if t.CallbackURL == "" {
		return admin.ReplayOutcome{}, baton.Errorf(baton.EConflict, "task has no callback")
	}
	m.replays = append(m.replays, req)
	cbs := m.callbacks[id]
	last := cbs[len(cbs)-1]
	m.callbacks[id] = append(cbs, admin.CallbackAttempt{Attempt: len(cbs) + 1, URL: t.CallbackURL, RequestBody: last.RequestBody,
		ResponseStatus: 200, ResponseBody: "ok", SentAt: time.Now(), DurationMs: 42, Replay: true})
	return admin.ReplayOutcome{Delivered: true, Attempts: 1, ResponseStatus: 200}, nil
}

func (m *memPDF) CreateKey(_ context.Context, name string) (admin.NewAPIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextKey++
	k := admin.NewAPIKey{ID: fmt.Sprintf("key_%02d", m.nextKey+1), Name: name, Key: "bk_live_" + strings.Repeat("7", 40),
		Secret: "whsec_" + strings.Repeat("3", 40), CreatedAt: time.Now()}
	m.keys = append(m.keys, admin.APIKeyInfo{ID: k.ID, Name: k.Name, CreatedAt: k.CreatedAt})
	return k, nil
}

func (m *memPDF) ListKeys(context.Context) ([]admin.APIKeyInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]admin.APIKeyInfo(nil), m.keys...), nil
}

func (m *memPDF) RevokeKey(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.keys {
		if m.keys[i].ID == id {
			if m.keys[i].RevokedAt.IsZero() {
				m.keys[i].RevokedAt = time.Now()
			}
			return nil
		}
	}
	return baton.Errorf(baton.ENotFound, "api key not found")
}

func (m *memPDF) revoked(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.keys {
		if k.ID == id {
			return !k.RevokedAt.IsZero()
		}
	}
	return false
}

func (m *memPDF) replayed() []admin.ReplayRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]admin.ReplayRequest(nil), m.replays...)
}
