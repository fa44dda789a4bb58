package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/runs"
)

// slowEcho echoes the last log entry after a pause, counting the runs in
// progress on this replica.
func slowEcho(inFlight *atomic.Int32) runs.GraphSpec {
	return runs.GraphSpec{Description: "echoes after a pause", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(testLog)
		b.AddNode("echo", func(ctx context.Context, s graph.State) (graph.Output, error) {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			select {
			case <-time.After(150 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			l := testLog.Get(s)
			return graph.Writes(graph.Append(testLog, "echo "+l[len(l)-1])), nil
		})
		b.SetEntry("echo")
		b.AddEdge("echo", graph.END)
		return b.Compile()
	}}
}

// Two replicas on one PostgreSQL run an experiment; one is stopped in the
// middle of it, cutting its running units and runs. The other picks its
// units up (each retried unit on a fresh thread) and the experiment
// succeeds with every unit recorded exactly once.
func TestExperimentSurvivesReplicaStop(t *testing.T) {
	dbURL, _, _ := pgSchema(t, "exp")
	redis := "redis://" + testenv.RedisAddr(t)
	var flightA, flightB atomic.Int32
	replica := func(inFlight *atomic.Int32) *running {
		s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: dbURL, Redis: redis, DataDir: t.TempDir(), Logger: quiet(),
			ShutdownGrace: 20 * time.Millisecond, LeaseTTL: 2 * time.Second, SweepInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register("slow", slowEcho(inFlight)); err != nil {
			t.Fatal(err)
		}
		return serveInBackground(t, s)
	}
	a, b := replica(&flightA), replica(&flightB)

	var asst struct {
		AssistantID string `json:"assistant_id"`
	}
	xcall(t, "POST", b.url+"/assistants", "application/json", jsonBody(map[string]any{"graph_id": "slow"}), 200, &asst)
	const nCases, reps = 12, 2
	var cases []any
	for i := range nCases {
		cases = append(cases, map[string]any{"id": fmt.Sprintf("c%02d", i), "input": map[string]any{"state": map[string]any{"log": []string{fmt.Sprint("m", i)}}},
			"criteria": []any{map[string]any{"evaluator": "contains", "params": map[string]any{"values": []string{fmt.Sprint("echo m", i)}}}}})
	}
	var ds struct {
		DatasetID string `json:"dataset_id"`
	}
	xcall(t, "POST", b.url+"/datasets", "application/json", jsonBody(map[string]any{"name": "replicas", "cases": cases}), 200, &ds)
	var exp experimentView
	xcall(t, "POST", a.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": asst.AssistantID,
		"repetitions": reps, "concurrency": 6}), 201, &exp)

	// Stop A while it executes a run, after some units are recorded.
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var cur experimentView
		xcall(t, "GET", b.url+"/experiments/"+exp.ExperimentID, "", nil, 200, &cur)
		if cur.Progress.Done >= 4 && flightA.Load() > 0 {
			t.Logf("stopping replica A at %d of %d units", cur.Progress.Done, cur.Progress.Total)
			break
		}
		if cur.Status != "pending" && cur.Status != "running" || time.Now().After(end) {
			t.Fatalf("the experiment reached %+v before replica A could be stopped", cur)
		}
	}
	a.stop(t)

	_, end := streamExperiment(t, b.url, exp.ExperimentID)
	var results []resultView
	xcall(t, "GET", b.url+"/experiments/"+exp.ExperimentID+"/results", "", nil, 200, &results)
	if end.Status != "success" || end.Progress.Done != nCases*reps || end.Progress.Passed != nCases*reps {
		t.Fatalf("after the stop the experiment ended %+v: %+v", end, results)
	}
	seen := map[string]bool{}
	retried := 0
	for _, r := range results {
		k := fmt.Sprintf("%s/%d", r.CaseID, r.Repetition)
		if seen[k] || !r.Passed {
			t.Fatalf("unit %s recorded twice or failed: %+v", k, r)
		}
		seen[k] = true
		if r.ThreadID != eval.ThreadID(fmt.Sprintf("%s/rep%d/attempt1", exp.ExperimentID, r.Repetition), r.CaseID, 0, 0) {
			retried++
		}
	}
	if len(seen) != nCases*reps {
		t.Fatalf("%d units recorded, want %d", len(seen), nCases*reps)
	}
	// Which units A held when it stopped depends on which replica fetched
	// them; a unit it held was retried (a new thread), one whose run it
	// executed was taken over by B or retried. Either way every unit is
	// above, once.
	t.Logf("%d units were retried on a fresh thread after the stop", retried)
}

// BenchmarkExperimentThroughput runs a 100-case experiment (one
// repetition, concurrency 8) on the echo graph and reports units per
// second, on SQLite and, with TRELLIS_TEST_PG_DSN, on PostgreSQL.
func BenchmarkExperimentThroughput(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				var cfg Config
				if backend == "postgres" {
					url, _, _ := pgSchema(b, "bexp")
					cfg = Config{Database: url, DataDir: b.TempDir()}
				} else {
					cfg = Config{Database: b.TempDir() + "/t.db", DataDir: b.TempDir()}
				}
				r := start(b, cfg, nil)
				var cases []any
				for i := range 100 {
					cases = append(cases, map[string]any{"id": fmt.Sprintf("c%03d", i), "input": map[string]any{"state": map[string]any{"log": []string{fmt.Sprint("m", i)}}}})
				}
				crit := []any{map[string]any{"evaluator": "contains", "params": map[string]any{"values": []string{"echo m"}}}}
				var ds struct {
					DatasetID string `json:"dataset_id"`
				}
				xcall(b, "POST", r.url+"/datasets", "application/json", jsonBody(map[string]any{"name": "bench", "criteria": crit, "cases": cases}), 200, &ds)
				var asst struct {
					AssistantID string `json:"assistant_id"`
				}
				xcall(b, "POST", r.url+"/assistants", "application/json", jsonBody(map[string]any{"graph_id": "echo"}), 200, &asst)
				b.StartTimer()
				t0 := time.Now()
				var exp experimentView
				xcall(b, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": asst.AssistantID,
					"repetitions": 1, "concurrency": 8}), 201, &exp)
				_, end := streamExperiment(b, r.url, exp.ExperimentID)
				el := time.Since(t0)
				b.StopTimer()
				if end.Status != "success" || end.Progress.Passed != 100 {
					b.Fatalf("the experiment ended %+v", end)
				}
				b.ReportMetric(100/el.Seconds(), "units/s")
				r.stop(b)
			}
		})
	}
}

// An agent whose own failure says "context canceled" (a call it made was
// cancelled) has failed: its unit is recorded on its first attempt, not
// run again as if a stopping replica had cut it.
func TestUnitFailureMentioningCancelIsRecorded(t *testing.T) {
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Register("fails", runs.GraphSpec{Description: "fails as a cancelled upstream call does", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(testLog)
		b.AddNode("fetch", func(context.Context, graph.State) (graph.Output, error) {
			return nil, errors.New("fetch the page: context canceled")
		})
		b.SetEntry("fetch")
		b.AddEdge("fetch", graph.END)
		return b.Compile()
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	var asst struct {
		AssistantID string `json:"assistant_id"`
	}
	xcall(t, "POST", r.url+"/assistants", "application/json", jsonBody(map[string]any{"graph_id": "fails"}), 200, &asst)
	var ds struct {
		DatasetID string `json:"dataset_id"`
	}
	xcall(t, "POST", r.url+"/datasets", "application/json", jsonBody(map[string]any{"name": "cancels", "cases": []any{
		map[string]any{"id": "c", "input": map[string]any{"state": map[string]any{"log": []string{"go"}}},
			"criteria": []any{map[string]any{"evaluator": "contains", "params": map[string]any{"values": []string{"page"}}}}}}}), 200, &ds)
	var exp experimentView
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": asst.AssistantID,
		"repetitions": 1}), 201, &exp)
	_, end := streamExperiment(t, r.url, exp.ExperimentID)
	var results []resultView
	xcall(t, "GET", r.url+"/experiments/"+exp.ExperimentID+"/results", "", nil, 200, &results)
	if end.Status != "success" || len(results) != 1 || results[0].Passed || !strings.Contains(results[0].Error, "context canceled") {
		t.Fatalf("the experiment ended %+v with %+v; want the unit recorded as failed", end, results)
	}
	if want := eval.ThreadID(exp.ExperimentID+"/rep0/attempt1", "c", 0, 0); results[0].ThreadID != want {
		t.Fatalf("the unit was recorded on thread %s, want its first attempt's %s: it was run again", results[0].ThreadID, want)
	}
}
