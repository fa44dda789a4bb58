package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/runs"
)

// The experiment kill test runs an experiment on two replicas — this test
// binary re-run as servers on one PostgreSQL schema — whose node waits at
// a gate the test controls, kills with SIGKILL the replica that holds some
// of the running units, and checks that the survivor rescues them: the
// experiment succeeds, every (case, repetition) is recorded once and each
// killed unit ran again once.

const (
	envExpKillChild = "TRELLIS_EXPKILL_CHILD" // the child's directory
	envExpKillDB    = "TRELLIS_EXPKILL_DB"
	envExpKillRedis = "TRELLIS_EXPKILL_REDIS"
	// expKillUnitTimeout is the replicas' unit bound: a killed unit is
	// rescued twice this long after its attempt began, at the leader's next
	// rescue (every 30 s).
	expKillUnitTimeout = 10 * time.Second
)

// gatedGraph records each start of its node in dir/side.log, then waits
// until dir/open exists or it takes a token (removes a dir/tok-* file),
// records its pass and echoes the last log entry.
func gatedGraph(dir string) runs.GraphSpec {
	record := func(line string) error {
		f, err := os.OpenFile(filepath.Join(dir, "side.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, line)
		return err
	}
	through := func() bool {
		if _, err := os.Stat(filepath.Join(dir, "open")); err == nil {
			return true
		}
		toks, _ := filepath.Glob(filepath.Join(dir, "tok-*"))
		for _, t := range toks {
			if os.Remove(t) == nil { // one remover wins each token
				return true
			}
		}
		return false
	}
	return runs.GraphSpec{Description: "echoes once the test's gate lets it", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(testLog)
		b.AddNode("echo", func(ctx context.Context, s graph.State) (graph.Output, error) {
			if err := record(fmt.Sprintf("start %d %s", os.Getpid(), graph.ThreadID(ctx))); err != nil {
				return nil, err
			}
			for !through() {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
			if err := record(fmt.Sprintf("pass %d %s", os.Getpid(), graph.ThreadID(ctx))); err != nil {
				return nil, err
			}
			l := testLog.Get(s)
			return graph.Writes(graph.Append(testLog, "echo "+l[len(l)-1])), nil
		})
		b.SetEntry("echo")
		b.AddEdge("echo", graph.END)
		return b.Compile()
	}}
}

// expKillChild serves one replica until it is killed, printing its URL.
func expKillChild() int {
	dir := os.Getenv(envExpKillChild)
	logf, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("replica-%d.log", os.Getpid())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	s, err := New(context.Background(), Config{
		Addr: "127.0.0.1:0", Database: os.Getenv(envExpKillDB), Redis: os.Getenv(envExpKillRedis), DataDir: dir,
		LeaseTTL: 3 * time.Second, SweepInterval: 200 * time.Millisecond, UnitTimeout: expKillUnitTimeout,
		Logger: slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	if err := s.Register("gated", gatedGraph(dir)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	go func() {
		<-s.Ready()
		fmt.Printf("URL http://%s\n", s.Addr())
	}()
	if err := s.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 4
	}
	return 0
}

// unitHolding is a running unit job: its index and the River client
// working it.
type unitHolding struct {
	id     int64
	index  int
	holder string
}

// runningUnits lists the experiment unit jobs running in schema.
func runningUnits(t *testing.T, conn *pgx.Conn, schema string) []unitHolding {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT id, (args->>'index')::int, attempted_by[array_length(attempted_by, 1)]
		FROM `+schema+`.river_job WHERE kind = 'trellis_experiment_unit' AND state = 'running' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var out []unitHolding
	for rows.Next() {
		var u unitHolding
		if err := rows.Scan(&u.id, &u.index, &u.holder); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// unfinishedUnits counts the experiment unit jobs in schema not completed.
func unfinishedUnits(t *testing.T, conn *pgx.Conn, schema string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.river_job
		WHERE kind = 'trellis_experiment_unit' AND state <> 'completed'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// gateCounts reads side.log: node starts and passes by thread.
func gateCounts(t *testing.T, dir string) (starts, passes map[string]int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "side.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	starts, passes = map[string]int{}, map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		// The thread ID is recorded after its tenant ("default/…").
		_, thread, _ := strings.Cut(f[2], "/")
		if f[0] == "start" {
			starts[thread]++
		} else {
			passes[thread]++
		}
	}
	return starts, passes
}

func gateSum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestExperimentSurvivesReplicaKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dbURL, schema, conn := pgSchema(t, "expkill")
	redis := "redis://" + testenv.RedisAddr(t)
	dir := t.TempDir()
	replica := func() (*exec.Cmd, string) {
		t.Helper()
		return startChildEnv(t, envExpKillChild+"="+dir, envExpKillDB+"="+dbURL, envExpKillRedis+"="+redis)
	}
	defer func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), b)
			}
		}
	}()

	// The survivor starts first and so leads River's maintenance: its
	// rescuer is the one that finds the killed replica's units.
	_, survivor := replica()
	var leader string
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := conn.QueryRow(context.Background(), "SELECT leader_id FROM "+schema+".river_leader").Scan(&leader)
		if err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the first replica did not become River's leader: %v", err)
		}
	}
	victim, victimURL := replica()

	var asst struct {
		AssistantID string `json:"assistant_id"`
	}
	xcall(t, "POST", victimURL+"/assistants", "application/json", jsonBody(map[string]any{"graph_id": "gated"}), 200, &asst)
	const nCases, reps, lanes = 6, 2, 4
	var cases []any
	for i := range nCases {
		cases = append(cases, map[string]any{"id": fmt.Sprintf("c%02d", i), "input": map[string]any{"state": map[string]any{"log": []string{fmt.Sprint("m", i)}}},
			"criteria": []any{map[string]any{"evaluator": "contains", "params": map[string]any{"values": []string{fmt.Sprint("echo m", i)}}}}})
	}
	var ds struct {
		DatasetID string `json:"dataset_id"`
	}
	xcall(t, "POST", survivor+"/datasets", "application/json", jsonBody(map[string]any{"name": "kill", "cases": cases}), 200, &ds)
	var exp experimentView
	xcall(t, "POST", survivor+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": asst.AssistantID,
		"repetitions": reps, "concurrency": lanes}), 201, &exp)

	// Wait until every lane's unit is running with its node at the gate
	// and both replicas hold units; while one replica holds them all, let
	// one node through so its lane's next unit is fetched anew.
	var held []unitHolding
	tokens := 0
	for end := time.Now().Add(40 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the units were not spread over both replicas in time: %+v", runningUnits(t, conn, schema))
		}
		running := runningUnits(t, conn, schema)
		starts, passes := gateCounts(t, dir)
		if len(running) == 0 || len(running) != unfinishedUnits(t, conn, schema) ||
			gateSum(starts)-gateSum(passes) != len(running) || gateSum(passes) != tokens {
			continue // a unit is still on its way to the gate
		}
		held = held[:0]
		for _, u := range running {
			if u.holder != leader {
				held = append(held, u)
			}
		}
		if len(held) > 0 && len(held) < len(running) {
			break
		}
		if len(running) < 2 {
			t.Fatalf("every unit ran on one replica: %+v", running)
		}
		tokens++
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("tok-%d", tokens)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("killing the replica holding %d running units after %d units passed the gate", len(held), tokens)
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	killed := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "open"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// The survivor finishes its units, rescues the killed ones and ends
	// the experiment, within the rescue bound and a margin.
	var cur experimentView
	for end := killed.Add(2*expKillUnitTimeout + 30*time.Second + 30*time.Second); ; time.Sleep(100 * time.Millisecond) {
		xcall(t, "GET", survivor+"/experiments/"+exp.ExperimentID, "", nil, 200, &cur)
		if cur.Status != "pending" && cur.Status != "running" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the experiment did not end after the kill: %+v; running units %+v", cur, runningUnits(t, conn, schema))
		}
	}
	t.Logf("the experiment ended %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	var results []resultView
	xcall(t, "GET", survivor+"/experiments/"+exp.ExperimentID+"/results", "", nil, 200, &results)
	if cur.Status != "success" || cur.Progress.Done != nCases*reps || cur.Progress.Passed != nCases*reps {
		t.Fatalf("after the kill the experiment ended %+v: %+v", cur, results)
	}
	byUnit := map[string]resultView{}
	for _, r := range results {
		k := fmt.Sprintf("%s/%d", r.CaseID, r.Repetition)
		if _, dup := byUnit[k]; dup || !r.Passed {
			t.Fatalf("unit %s recorded twice or failed: %+v", k, r)
		}
		byUnit[k] = r
	}
	if len(byUnit) != nCases*reps {
		t.Fatalf("%d units recorded, want %d: %+v", len(byUnit), nCases*reps, results)
	}
	// The database holds one row per unit too.
	var rowsN, unitsN int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT (case_id, repetition)) FROM `+schema+`.trellis_experiment_results
		WHERE experiment_id = $1`, exp.ExperimentID).Scan(&rowsN, &unitsN); err != nil {
		t.Fatal(err)
	}
	if rowsN != nCases*reps || unitsN != nCases*reps {
		t.Fatalf("the database holds %d results of %d units, want %d of %d", rowsN, unitsN, nCases*reps, nCases*reps)
	}

	// Each killed unit ran again exactly once and was recorded by that
	// second attempt, on its own thread.
	for _, u := range held {
		// The job completes once its Work returned, just after it recorded
		// the unit.
		var attempt int
		var state string
		for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err := conn.QueryRow(context.Background(), "SELECT attempt, state FROM "+schema+".river_job WHERE id = $1", u.id).Scan(&attempt, &state); err != nil {
				t.Fatal(err)
			}
			if state != "running" || time.Now().After(end) {
				break
			}
		}
		ci, rep := u.index/reps, u.index%reps
		caseID := fmt.Sprintf("c%02d", ci)
		r := byUnit[fmt.Sprintf("%s/%d", caseID, rep)]
		second := eval.ThreadID(fmt.Sprintf("%s/rep%d/attempt2", exp.ExperimentID, rep), caseID, 0, 0)
		if state != "completed" || attempt != 2 || r.ThreadID != second {
			t.Errorf("killed unit %d (%s/%d): job %s at attempt %d, recorded on thread %s; want completed at attempt 2, recorded on %s",
				u.index, caseID, rep, state, attempt, r.ThreadID, second)
		}
	}
}
