package httpapi_test

import (
	"bytes"
	"testing"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/httpapi"
)

// FuzzDecodeWorkerBodies feeds arbitrary bytes to the strict decoder with
// every worker-protocol request type: it must never panic, and anything it
// accepts must also pass (or be cleanly refused by) validation.
func FuzzDecodeWorkerBodies(f *testing.F) {
	for _, s := range []string{
		`{"workerId":"w","types":["domain.*"],"max":1,"waitMs":100}`,
		`{"leaseToken":"abc","outcome":"pass","reason":"ok","data":{"a":[1,2]},"retryAfterMs":0}`,
		`{"results":[{"taskId":"x","leaseToken":"t","outcome":"retry","retryAfterMs":1000}]}`,
		`{"leaseToken":"t","extendMs":30000}`,
		`{"type":"a.b","payload":null,"queue":"q","maxAttempts":3,"leaseTtlMs":1000,"dedupKey":"k","runAt":"2026-01-01T00:00:00Z"}`,
		`{"workerId":`, `[]`, `null`, `{"max":1e400}`, "{\"reason\":\"\xff\"}", `{"a":1}{"b":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c baton.ClaimRequest
		if httpapi.DecodeStrict(bytes.NewReader(b), 1<<20, &c) == nil {
			_ = c.Validate()
		}
		var r baton.Result
		if httpapi.DecodeStrict(bytes.NewReader(b), 1<<20, &r) == nil {
			if err := r.Validate(); err == nil && (r.LeaseToken == "" || !r.Outcome.Valid()) {
				t.Fatalf("validated a result without token or outcome: %+v", r)
			}
		}
		var rs baton.ResultsRequest
		_ = httpapi.DecodeStrict(bytes.NewReader(b), 1<<20, &rs)
		var hb baton.HeartbeatRequest
		_ = httpapi.DecodeStrict(bytes.NewReader(b), 1<<20, &hb)
		var ts controller.TaskSpec
		_ = httpapi.DecodeStrict(bytes.NewReader(b), 1<<20, &ts)
	})
}
