package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/graph"
)

type benchFinished struct{}

func (benchFinished) Name() string { return "bench_finished" }
func (benchFinished) Evaluate(_ context.Context, t eval.Trial) (eval.Score, error) {
	if t.Thread.Error != "" || len(t.Thread.Interrupts) < 4 {
		return eval.Score{Explanation: t.Thread.Error}, nil
	}
	return eval.Score{Value: 1}, nil
}

func init() {
	eval.Register("bench_finished", func(json.RawMessage) (eval.Evaluator, error) { return benchFinished{}, nil })
}

// TestEvalPlannerAtScale runs the scripted planner through the eval
// runner: TRELLIS_BENCH_EVAL_CASES cases (default 1000) × 3 repetitions,
// 8 at a time, threads in a SQLite file; it logs the wall time, the
// process's peak RSS and the heap in use after the run. Opt-in: set
// TRELLIS_BENCH_EVAL=1.
func TestEvalPlannerAtScale(t *testing.T) {
	if os.Getenv("TRELLIS_BENCH_EVAL") == "" {
		t.Skip("set TRELLIS_BENCH_EVAL=1 to run the 1,000-case × 3 evaluation of the scripted planner")
	}
	cases := 1000
	if v := os.Getenv("TRELLIS_BENCH_EVAL_CASES"); v != "" {
		fmt.Sscan(v, &cases)
	}
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "eval.db")
	saver, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	app, err := planner.Entry().Open(ctx, apps.Env{Model: planner.Script(), Database: db, DataDir: filepath.Dir(db)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	ds := &eval.Dataset{Name: "planner-scale", Criteria: []eval.Criterion{{Evaluator: "bench_finished"}}}
	answers := []eval.Answer{
		{Kind: "planexec_ask", Question: "city", Value: json.RawMessage(`"Lisbon"`)},
		{Kind: "planexec_ask", Value: json.RawMessage(`{"people":12,"length":"2 days"}`)},
		{Kind: "planexec_plan_review", Repeat: true, Value: json.RawMessage(`{"action":"approve"}`)},
		{Kind: "tool_approval", Repeat: true, Value: json.RawMessage(`{"action":"approve"}`)},
	}
	for i := range cases {
		ds.Cases = append(ds.Cases, eval.Case{ID: fmt.Sprint("offsite-", i), Input: eval.Input{Message: "Plan our team offsite"}, Answers: answers})
	}
	target := &eval.GraphTarget{Graph: app.Graph, Saver: saver, Options: app.Options,
		Message: func(text string) (graph.Update, error) { return app.Input(text), nil }}
	var done atomic.Int64
	r := &eval.Runner{Target: target, Experiment: "scale", Repeat: 3, Concurrency: 8, Timeout: 5 * time.Minute,
		Progress: func(eval.TrialResult, int, int) { done.Add(1) }}
	start := time.Now()
	exp, err := r.Run(ctx, ds)
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Summary.Trials != 3*cases || exp.Summary.CasesPassed != cases {
		t.Fatalf("%d trials, %d of %d cases passed; first failure: %+v", exp.Summary.Trials, exp.Summary.CasesPassed, cases, exp.Cases[0].Trials[0])
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%d cases × 3 at concurrency 8: wall %s (%.1f trials/s, mean trial latency %s); peak RSS %d MiB; heap in use after %d MiB; load average %s",
		cases, wall.Round(time.Millisecond), float64(3*cases)/wall.Seconds(), exp.Summary.Latency.Round(time.Millisecond),
		ru.Maxrss/1024, ms.HeapInuse>>20, string(load[:min(len(load), 14)]))
}
