package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/artifact"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/httpapi"
	"github.com/batonhq/baton/queue"
	"github.com/batonhq/baton/queue/sqliteq"
)

const (
	adminTok  = "admin-secret-token"
	workerTok = "worker-secret-token"
)

type env struct {
	srv  *httptest.Server
	ctrl *controller.Controller
	st   queue.Store
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqliteq.Open(ctx, filepath.Join(t.TempDir(), "q.db"), sqliteq.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	c, err := controller.New(controller.Config{Store: st, ReapInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(ctx)
	arts, err := artifact.NewFS(filepath.Join(t.TempDir(), "arts"), 1024)
	if err != nil {
		t.Fatal(err)
	}
	s := httpapi.New(httpapi.Config{Controller: c, Tokens: httpapi.Tokens{Admin: adminTok, Worker: workerTok}, Artifacts: arts})
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); c.Stop(); _ = st.Close() })
	return &env{srv: srv, ctrl: c, st: st}
}

func (e *env) do(t *testing.T, method, path, token, body string, hdr ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// snapshot is what "nothing changed" means: every queue's counters and
// the state of the tasks we know.
func (e *env) snapshot(t *testing.T, ids ...string) string {
	t.Helper()
	qs, err := e.st.Queues(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		qs[i].OldestAgeMs = 0
	}
	var infos []baton.TaskInfo
	for _, id := range ids {
		ti, err := e.st.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, ti)
	}
	b, _ := json.Marshal(struct {
		Q []queue.QueueStat
		T []baton.TaskInfo
	}{qs, infos})
	return string(b)
}

func errCode(t *testing.T, body string) string {
	t.Helper()
	var eb httpapi.ErrorBody
	if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error.Code == "" {
		t.Fatalf("error answer is not a JSON error body: %q", body)
	}
	if eb.Error.Message == "" {
		t.Fatalf("error answer has no message: %q", body)
	}
	return eb.Error.Code
}

func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	e := newEnv(t)
	// One task claimed under a lease, to aim bad heartbeats and results at.
	st, body := e.do(t, "POST", "/api/tasks", adminTok, `{"type":"demo.job","payload":{"n":1}}`)
	if st != 202 {
		t.Fatalf("create: %d %s", st, body)
	}
	var cr controller.Created
	_ = json.Unmarshal([]byte(body), &cr)
	st, body = e.do(t, "POST", "/api/worker/claim", workerTok, `{"workerId":"w1","types":["demo.*"],"max":1}`)
	var claim baton.ClaimResponse
	if err := json.Unmarshal([]byte(body), &claim); err != nil || st != 200 || len(claim.Tasks) != 1 {
		t.Fatalf("claim: %d %s", st, body)
	}
	task := claim.Tasks[0]
	before := e.snapshot(t, cr.TaskID)

	huge := `{"workerId":"w1","max":1,"name":"` + strings.Repeat("x", 2<<20) + `"}`
	tests := []struct {
		name, method, path, token, body string
		hdr                             []string
		status                          int
		code                            string
	}{
		{"no token", "POST", "/api/worker/claim", "", `{"workerId":"w","max":1}`, nil, 401, baton.EUnauthorized},
		{"wrong token", "POST", "/api/worker/claim", "nope", `{"workerId":"w","max":1}`, nil, 401, baton.EUnauthorized},
		{"worker token on admin route", "POST", "/api/tasks", workerTok, `{"type":"x"}`, nil, 403, baton.EForbidden},
		{"malformed json", "POST", "/api/worker/claim", workerTok, `{"workerId":`, nil, 400, baton.EInvalid},
		{"not an object", "POST", "/api/worker/claim", workerTok, `[1,2]`, nil, 400, baton.EInvalid},
		{"trailing data", "POST", "/api/worker/claim", workerTok, `{"workerId":"w","max":1} {}`, nil, 400, baton.EInvalid},
		{"unknown field", "POST", "/api/worker/claim", workerTok, `{"workerId":"w","max":1,"bogus":true}`, nil, 400, baton.EInvalid},
		{"wrong type", "POST", "/api/worker/claim", workerTok, `{"workerId":"w","max":"1"}`, nil, 400, baton.EInvalid},
		{"empty body", "POST", "/api/worker/claim", workerTok, ``, nil, 400, baton.EInvalid},
		{"wrong content type", "POST", "/api/worker/claim", workerTok, `{"workerId":"w","max":1}`, []string{"Content-Type", "text/plain"}, 400, baton.EInvalid},
		{"oversize body", "POST", "/api/worker/claim", workerTok, huge, nil, 413, baton.ETooLarge},
		{"max 0", "POST", "/api/worker/claim", workerTok, `{"workerId":"w","max":0}`, nil, 400, baton.EInvalid},
		{"max 257", "POST", "/api/worker/claim", workerTok, `{"workerId":"w","max":257}`, nil, 400, baton.EInvalid},
		{"waitMs negative", "POST", "/api/worker/claim", workerTok, `{"workerId":"w","max":1,"waitMs":-1}`, nil, 400, baton.EInvalid},
		{"waitMs too long", "POST", "/api/worker/claim", workerTok, `{"workerId":"w","max":1,"waitMs":60001}`, nil, 400, baton.EInvalid},
		{"no workerId", "POST", "/api/worker/claim", workerTok, `{"max":1}`, nil, 400, baton.EInvalid},
		{"heartbeat stale token", "POST", "/api/worker/tasks/" + task.ID + "/heartbeat", workerTok, `{"leaseToken":"stale"}`, nil, 409, baton.ELeaseLost},
		{"heartbeat unknown task", "POST", "/api/worker/tasks/01UNKNOWN/heartbeat", workerTok, `{"leaseToken":"x"}`, nil, 404, baton.ENotFound},
		{"heartbeat no token", "POST", "/api/worker/tasks/" + task.ID + "/heartbeat", workerTok, `{}`, nil, 400, baton.EInvalid},
		{"result stale token", "POST", "/api/worker/tasks/" + task.ID + "/result", workerTok, `{"leaseToken":"stale","outcome":"pass"}`, nil, 409, baton.ELeaseLost},
		{"result bad outcome", "POST", "/api/worker/tasks/" + task.ID + "/result", workerTok, `{"leaseToken":"` + task.LeaseToken + `","outcome":"maybe"}`, nil, 400, baton.EInvalid},
		{"result bad data", "POST", "/api/worker/tasks/" + task.ID + "/result", workerTok, `{"leaseToken":"` + task.LeaseToken + `","outcome":"pass","retryAfterMs":-5}`, nil, 400, baton.EInvalid},
		{"result unknown task", "POST", "/api/worker/tasks/01UNKNOWN/result", workerTok, `{"leaseToken":"x","outcome":"pass"}`, nil, 404, baton.ENotFound},
		{"results not a list", "POST", "/api/worker/results", workerTok, `{"results":{}}`, nil, 400, baton.EInvalid},
		{"artifact without lease", "PUT", "/api/worker/tasks/" + task.ID + "/artifact", workerTok, `%PDF`, nil, 400, baton.EInvalid},
		{"artifact stale lease", "PUT", "/api/worker/tasks/" + task.ID + "/artifact", workerTok, `%PDF`, []string{"X-Lease-Token", "stale"}, 409, baton.ELeaseLost},
		{"create bad type", "POST", "/api/tasks", adminTok, `{"type":"has space"}`, nil, 400, baton.EInvalid},
		{"create no type", "POST", "/api/tasks", adminTok, `{"payload":{}}`, nil, 400, baton.EInvalid},
		{"create lease too short", "POST", "/api/tasks", adminTok, `{"type":"x","leaseTtlMs":999}`, nil, 400, baton.EInvalid},
		{"create attempts", "POST", "/api/tasks", adminTok, `{"type":"x","maxAttempts":1000}`, nil, 400, baton.EInvalid},
		{"batch with one bad", "POST", "/api/tasks/batch", adminTok, `{"tasks":[{"type":"ok"},{"type":""}]}`, nil, 400, baton.EInvalid},
		{"batch empty", "POST", "/api/tasks/batch", adminTok, `{"tasks":[]}`, nil, 400, baton.EInvalid},
		{"get unknown task", "GET", "/api/tasks/01UNKNOWN", adminTok, ``, nil, 404, baton.ENotFound},
		{"cancel unknown task", "DELETE", "/api/tasks/01UNKNOWN", adminTok, ``, nil, 404, baton.ENotFound},
		{"pause bad queue name", "POST", "/api/queues/bad%20name/pause", adminTok, ``, nil, 400, baton.EInvalid},
		{"queue negative rate", "PUT", "/api/queues/demo.job", adminTok, `{"ratePerMin":-1}`, nil, 400, baton.EInvalid},
		{"unknown route", "GET", "/api/nothing", adminTok, ``, nil, 404, baton.ENotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, body := e.do(t, tc.method, tc.path, tc.token, tc.body, tc.hdr...)
			if st != tc.status {
				t.Fatalf("status = %d, want %d (body %s)", st, tc.status, body)
			}
			if got := errCode(t, body); got != tc.code {
				t.Fatalf("code = %q, want %q (body %s)", got, tc.code, body)
			}
			if diff := cmp.Diff(before, e.snapshot(t, cr.TaskID)); diff != "" {
				t.Fatalf("state changed (-before +after):\n%s", diff)
			}
		})
	}

	// And the lease is still good: the real result is accepted once, and a
	// re-send with the same token is answered the same.
	res := `{"leaseToken":"` + task.LeaseToken + `","outcome":"pass","data":{"ok":true}}`
	for i := 0; i < 2; i++ {
		if st, body := e.do(t, "POST", "/api/worker/tasks/"+task.ID+"/result", workerTok, res); st != 200 || strings.TrimSpace(body) != "{}" {
			t.Fatalf("result #%d: %d %s", i+1, st, body)
		}
	}
	ti, err := e.st.Get(context.Background(), task.ID)
	if err != nil || ti.Status != baton.StateCompleted || ti.Attempts != 1 {
		t.Fatalf("after result: %+v %v", ti, err)
	}
}

func TestClaimLongPollWakesOnNewTask(t *testing.T) {
	e := newEnv(t)
	c := httpapi.NewClient(e.srv.URL, workerTok)
	admin := httpapi.NewClient(e.srv.URL, adminTok)
	got := make(chan []baton.Task, 1)
	go func() {
		ts, err := c.Claim(context.Background(), baton.ClaimRequest{WorkerID: "w", Types: []string{"wake.*"}, Max: 4, WaitMs: 30000})
		if err != nil {
			t.Error(err)
		}
		got <- ts
	}()
	time.Sleep(100 * time.Millisecond) // the claim is waiting on an empty queue
	cr, err := admin.CreateTask(context.Background(), controller.TaskSpec{Type: "wake.me"})
	if err != nil {
		t.Fatal(err)
	}
	// The claim returns with the task well before its 30 s wait ends; the
	// test's own deadline is the only bound (no timing assertion).
	ts := <-got
	if len(ts) != 1 || ts[0].ID != cr.TaskID || ts[0].Attempt != 1 || ts[0].LeaseToken == "" {
		t.Fatalf("claim returned %+v, want task %s", ts, cr.TaskID)
	}
}

func TestBatchResultsReportEachEntry(t *testing.T) {
	e := newEnv(t)
	admin := httpapi.NewClient(e.srv.URL, adminTok)
	w := httpapi.NewClient(e.srv.URL, workerTok)
	ctx := context.Background()
	if _, err := admin.CreateTasks(ctx, []controller.TaskSpec{{Type: "b.x"}, {Type: "b.x"}}); err != nil {
		t.Fatal(err)
	}
	ts, err := w.Claim(ctx, baton.ClaimRequest{WorkerID: "w", Max: 2})
	if err != nil || len(ts) != 2 {
		t.Fatalf("claim: %v %v", ts, err)
	}
	resp, err := w.Results(ctx, []baton.ResultItem{
		{TaskID: ts[0].ID, Result: baton.Result{LeaseToken: ts[0].LeaseToken, Outcome: baton.OutcomePass}},
		{TaskID: ts[1].ID, Result: baton.Result{LeaseToken: "stale", Outcome: baton.OutcomePass}},
		{TaskID: "nope", Result: baton.Result{LeaseToken: "x", Outcome: baton.OutcomePass}},
		{TaskID: ts[1].ID, Result: baton.Result{LeaseToken: ts[1].LeaseToken, Outcome: "bogus"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := baton.ResultsResponse{
		Accepted: []string{ts[0].ID},
		Rejected: []baton.Rejection{
			{TaskID: ts[1].ID, Code: baton.ELeaseLost},
			{TaskID: "nope", Code: baton.ENotFound},
			{TaskID: ts[1].ID, Code: baton.EInvalid},
		},
	}
	if diff := cmp.Diff(want, resp, cmp.Transformer("nomsg", func(r baton.Rejection) baton.Rejection { r.Message = ""; return r })); diff != "" {
		t.Fatalf("results (-want +got):\n%s", diff)
	}
}

func TestArtifactUploadUnderLease(t *testing.T) {
	e := newEnv(t)
	admin := httpapi.NewClient(e.srv.URL, adminTok)
	w := httpapi.NewClient(e.srv.URL, workerTok)
	ctx := context.Background()
	if _, err := admin.CreateTask(ctx, controller.TaskSpec{Type: "a.x"}); err != nil {
		t.Fatal(err)
	}
	ts, err := w.Claim(ctx, baton.ClaimRequest{WorkerID: "w", Max: 1})
	if err != nil || len(ts) != 1 {
		t.Fatalf("claim: %v %v", ts, err)
	}
	info, err := w.Upload(ctx, ts[0].ID, ts[0].LeaseToken, bytes.NewReader([]byte("%PDF-1.7 hello")))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != 14 || len(info.SHA256) != 64 {
		t.Fatalf("upload answer %v", info)
	}
	// Over the 1 KiB limit of this test server.
	_, err = w.Upload(ctx, ts[0].ID, ts[0].LeaseToken, bytes.NewReader(bytes.Repeat([]byte("x"), 2048)))
	if baton.ErrorCode(err) != baton.ETooLarge {
		t.Fatalf("oversize upload: %v, want too_large", err)
	}
}

func TestHealthAndReady(t *testing.T) {
	e := newEnv(t)
	if st, _ := e.do(t, "GET", "/healthz", "", ""); st != 200 {
		t.Fatalf("healthz %d", st)
	}
	if st, body := e.do(t, "GET", "/readyz", "", ""); st != 200 || !strings.Contains(body, `"ready":true`) {
		t.Fatalf("readyz %d %s", st, body)
	}
}
