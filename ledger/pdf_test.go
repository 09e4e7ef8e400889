package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/google/go-cmp/cmp"
)

func TestAPIKeys(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		k := APIKey{ID: "k1", Name: "客户 A", KeyHash: strings.Repeat("ab", 32), Secret: "s3", CreatedAt: at(0)}
		if err := db.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		got, err := db.APIKeyByHash(ctx, k.KeyHash)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(k, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if err := db.RevokeAPIKey(ctx, "k1", at(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := db.RevokeAPIKey(ctx, "k1", at(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.APIKeyByHash(ctx, k.KeyHash); !errors.Is(err, ErrAPIKeyNotFound) {
			t.Errorf("revoked key found: %v", err)
		}
		if err := db.RevokeAPIKey(ctx, "nope", at(0)); !errors.Is(err, ErrAPIKeyNotFound) {
			t.Errorf("revoke unknown: %v", err)
		}
		k.RevokedAt = at(time.Hour)
		all, err := db.ListAPIKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]APIKey{k}, all); diff != "" {
			t.Errorf("list (-want +got):\n%s", diff)
		}
	})
}

func TestConversionTasks(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, db *DB) {
		task := ConversionTask{ID: "t1", APIKeyID: "k1", Status: baton.StatePending, SourceType: "html", Source: "<p>中文</p>",
			Options: json.RawMessage(`{"format":"A4"}`), CallbackURL: "https://cb.example/x", Queue: "pdf.normal",
			SuggestedQueue: "pdf.fast", IdempotencyKey: "idem-1", RequestHash: "h1", CreatedAt: at(0)}
		first, created, err := db.CreateConversionTask(ctx, task)
		if err != nil || !created {
			t.Fatalf("create: %v %v", created, err)
		}
		if diff := cmp.Diff(task, first); diff != "" {
			t.Errorf("create returned (-want +got):\n%s", diff)
		}
		again := task
		again.ID, again.RequestHash = "t2", "h2"
		stored, created, err := db.CreateConversionTask(ctx, again)
		if err != nil || created {
			t.Fatalf("same idempotency key: created %v, %v", created, err)
		}
		if diff := cmp.Diff(task, stored); diff != "" {
			t.Errorf("idempotent create returned (-want +got):\n%s", diff)
		}
		// Without a key, or with another API key, the same key is new.
		other := again
		other.APIKeyID = "k2"
		if _, created, err := db.CreateConversionTask(ctx, other); err != nil || !created {
			t.Errorf("other api key: %v %v", created, err)
		}
		nokey := ConversionTask{ID: "t3", Status: baton.StatePending, SourceType: "url", Source: "https://a.example", CreatedAt: at(0)}
		if _, created, err := db.CreateConversionTask(ctx, nokey); err != nil || !created {
			t.Errorf("no key: %v %v", created, err)
		}

		task.Status, task.Attempts, task.StartedAt, task.FinishedAt = baton.StateCompleted, 1, at(time.Second), at(3*time.Second)
		task.ResultPath, task.ResultSHA256, task.ResultSize = "data/pdf/t1.pdf", strings.Repeat("0", 64), 12345
		if err := db.UpdateConversionTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		got, err := db.GetConversionTask(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(task, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}
		if err := db.UpdateConversionTask(ctx, ConversionTask{ID: "nope", Status: baton.StateFailed}); !errors.Is(err, ErrConversionTaskNotFound) {
			t.Errorf("update unknown: %v", err)
		}

		logs := []CallbackLog{
			{TaskID: "t1", Attempt: 1, URL: task.CallbackURL, RequestBody: `{"taskId":"t1"}`, SentAt: at(4 * time.Second), DurationMs: 5000, Error: "timeout"},
			{TaskID: "t1", Attempt: 2, URL: task.CallbackURL, RequestBody: `{"taskId":"t1"}`, ResponseStatus: 200,
				ResponseBody: strings.Repeat("x", MaxCallbackResponseBody+10), SentAt: at(10 * time.Second), ResponseAt: at(11 * time.Second), DurationMs: 1000, Replay: true},
		}
		for i := range logs {
			id, err := db.AppendCallbackLog(ctx, logs[i])
			if err != nil {
				t.Fatal(err)
			}
			logs[i].ID = id
		}
		logs[1].ResponseBody = logs[1].ResponseBody[:MaxCallbackResponseBody]
		gotLogs, err := db.ListCallbackLogs(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(logs, gotLogs); diff != "" || logs[0].ID >= logs[1].ID {
			t.Errorf("callback logs (-want +got):\n%s", diff)
		}
	})
}
