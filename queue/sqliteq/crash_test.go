package sqliteq_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
	"github.com/batonhq/baton/queue/sqliteq"
)

// Environment of the crash child: the test binary re-executed by TestCrash.
const (
	crashDBEnv    = "BATON_SQLITEQ_CRASH_DB"
	crashRoundEnv = "BATON_SQLITEQ_CRASH_ROUND"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(crashDBEnv); path != "" {
		if err := crashChild(path, os.Getenv(crashRoundEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild works the store in a loop until it is killed, printing one
// line per committed transition, after the commit:
//
//	E <id>           a task was created
//	C <id> <state>   a result was applied, leaving the task in state
//	X <id>           a task was cancelled
func crashChild(path, round string) error {
	ctx := context.Background()
	s, err := sqliteq.Open(ctx, path, sqliteq.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	var r int
	fmt.Sscan(round, &r)
	// Each round starts an hour after the previous, so the leases a killed
	// child left behind are expired and get reaped.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r) * time.Hour)
	queues := []string{"a", "b", "c"}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		now = now.Add(100 * time.Millisecond)
		tasks := make([]queue.NewTask, 32)
		for j := range tasks {
			tasks[j] = queue.NewTask{ID: fmt.Sprintf("r%d-%d-%d", r, i, j), Type: "crash", Queue: queues[j%3],
				Payload: json.RawMessage(`{"j":` + fmt.Sprint(j) + `}`), MaxAttempts: 3, LeaseTTL: time.Second, Notify: true}
			if j%4 == 0 {
				tasks[j].DedupKey = fmt.Sprintf("key-%d", j%20)
			}
		}
		res, err := s.Enqueue(ctx, now, tasks)
		if err != nil {
			return err
		}
		for _, e := range res {
			if e.Created {
				fmt.Fprintf(out, "E %s\n", e.ID)
			}
		}
		out.Flush()

		claimed, err := s.Claim(ctx, queue.ClaimRequest{WorkerID: "child", Queues: queues, Max: 48, Now: now})
		if err != nil {
			return err
		}
		var cs []queue.Completion
		var cancel []string
		for k, tk := range claimed {
			c := queue.Completion{TaskID: tk.ID, Now: now, Result: baton.Result{LeaseToken: tk.LeaseToken, Outcome: baton.OutcomePass}}
			switch {
			case k%9 == 0:
				continue // abandoned: its lease expires
			case k%11 == 0:
				cancel = append(cancel, tk.ID)
				continue
			case k%5 == 0:
				c.Result.Outcome = baton.OutcomeRetry
			case k%3 == 0:
				c.FollowUps = []queue.NewTask{{ID: tk.ID + "-f", Type: "crash", Queue: "c", Notify: true, LeaseTTL: time.Second}}
				c.Outbox = []queue.OutboxEntry{{Kind: "ledger", Body: json.RawMessage(`{"id":"` + tk.ID + `"}`)}}
			}
			cs = append(cs, c)
		}
		results, err := s.Complete(ctx, cs)
		if err != nil {
			return err
		}
		for k, r := range results {
			if r.Err == nil {
				fmt.Fprintf(out, "C %s %s\n", cs[k].TaskID, r.Ack.State)
			}
		}
		out.Flush()
		for _, id := range cancel {
			if _, err := s.Cancel(ctx, id, now); err == nil {
				fmt.Fprintf(out, "X %s\n", id)
			}
		}
		out.Flush()
		if i%5 == 0 {
			if _, err := s.Reap(ctx, now, 100); err != nil {
				return err
			}
		}
	}
}

// TestCrash kills a child process working the store with SIGKILL at a
// random moment, several times over, and checks after each kill that the
// file opens, passes integrity_check, holds every transition the child saw
// committed, and that every task is in one consistent state.
func TestCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	terminal := map[string]baton.State{} // last terminal state reported per task
	created := map[string]bool{}
	for round := range 4 {
		lines := runAndKill(t, path, round, 200+rand.IntN(3000))
		for _, l := range lines {
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && f[0] == "E":
				created[f[1]] = true
			case len(f) == 3 && f[0] == "C":
				if st := baton.State(f[2]); st.Terminal() {
					terminal[f[1]] = st
				}
			case len(f) == 2 && f[0] == "X":
				terminal[f[1]] = baton.StateCancelled
			default:
				t.Fatalf("round %d: unexpected child output %q", round, l)
			}
		}
		checkConsistent(t, path, created, terminal)
		if t.Failed() {
			return
		}
		t.Logf("round %d: %d lines, %d tasks created, %d ended so far", round, len(lines), len(created), len(terminal))
	}
}

// runAndKill runs a crash child on path until it has printed at least
// after lines, kills it with SIGKILL and returns every line it printed.
func runAndKill(t *testing.T, path string, round, after int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashDBEnv+"="+path, fmt.Sprintf("%s=%d", crashRoundEnv, round))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start crash child: %v", err)
	}
	// Only whole lines count: a line cut by the kill (no newline) is dropped.
	lineCh := make(chan string, 1024)
	go func() {
		rd := bufio.NewReader(stdout)
		for {
			l, err := rd.ReadString('\n')
			if err != nil {
				close(lineCh)
				return
			}
			lineCh <- strings.TrimSuffix(l, "\n")
		}
	}()
	var lines []string
	killed := false
	timer := time.NewTimer(2 * time.Minute)
	defer timer.Stop()
loop:
	for {
		select {
		case l, ok := <-lineCh:
			if !ok {
				break loop
			}
			lines = append(lines, l)
			if !killed && len(lines) >= after {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatalf("kill: %v", err)
				}
				killed = true
			}
		case <-timer.C:
			_ = cmd.Process.Kill()
			t.Fatalf("round %d: child still running after 2 minutes", round)
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("round %d: child ended by itself after %d lines: %v\n%s", round, len(lines), err, stderr.String())
	}
	return lines
}

// checkConsistent reopens the store and checks the file and every task.
func checkConsistent(t *testing.T, path string, created map[string]bool, terminal map[string]baton.State) {
	t.Helper()
	ctx := context.Background()
	s, err := sqliteq.Open(ctx, path, sqliteq.Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check = %q, %v", ok, err)
	}

	// Every state's columns agree with it.
	var bad int
	if err := db.QueryRow(`SELECT count(*) FROM tasks WHERE NOT (
		((ready_at IS NOT NULL) = (state IN ('pending', 'stalled')))
		AND ((lease_token IS NOT NULL) = (state = 'processing'))
		AND ((lease_expires_at IS NOT NULL) = (state = 'processing'))
		AND ((finished_at IS NOT NULL) = (state IN ('completed', 'failed', 'timeout', 'cancelled')))
		AND attempt BETWEEN 0 AND max_attempts
		AND (state <> 'processing' OR attempt >= 1)
		AND (state <> 'completed' OR ack_token IS NOT NULL))`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("%d tasks whose columns contradict their state", bad)
	}
	// A dedup key is held by at most one unfinished task.
	if err := db.QueryRow(`SELECT count(*) FROM (SELECT dedup_key FROM tasks
		WHERE dedup_key IS NOT NULL AND state IN ('pending', 'processing', 'stalled')
		GROUP BY dedup_key HAVING count(*) > 1)`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("%d dedup keys held twice", bad)
	}
	// Exactly one task.final per ended task (all are created with Notify),
	// none for the others.
	finals := map[string]int{}
	entries, err := s.ReadOutbox(ctx, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Kind != queue.OutboxKindTaskFinal {
			continue
		}
		var f queue.TaskFinal
		if err := json.Unmarshal(e.Body, &f); err != nil {
			t.Fatalf("bad task.final %s: %v", e.Body, err)
		}
		finals[f.TaskID]++
	}
	rows, err := db.Query(`SELECT id, state FROM tasks`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	states := map[string]baton.State{}
	for rows.Next() {
		var id string
		var st baton.State
		if err := rows.Scan(&id, &st); err != nil {
			t.Fatal(err)
		}
		states[id] = st
		want := 0
		if st.Terminal() {
			want = 1
		}
		if finals[id] != want {
			t.Errorf("task %s (%s) has %d task.final events, want %d", id, st, finals[id], want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Nothing the child saw committed was lost.
	for id := range created {
		if _, ok := states[id]; !ok {
			t.Errorf("task %s was created but is gone", id)
		}
	}
	for id, st := range terminal {
		if states[id] != st {
			t.Errorf("task %s ended %s but is %s", id, st, states[id])
		}
	}
}
