package eval_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// BenchmarkRunnerOverhead measures what the runner adds to a case over
// the run itself: b.N one-message cases on the test chat graph, run in
// alternating chunks of 100 — directly (Invoke and GetState on a fresh
// thread), then through the runner (thread ID, answers, reading the thread
// back, trajectory, one evaluator, results and statistics), one at a time
// — so that a change in the machine's load falls on both alike. It reports
// both per case and their difference.
func BenchmarkRunnerOverhead(b *testing.B) {
	g := testGraph(b)
	ctx := context.Background()
	const chunk = 100
	n := max(b.N/chunk, 1) * chunk
	crit := []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":"echo"}`)}}
	saver := checkpoint.NewMemory()
	target := &eval.GraphTarget{Graph: g, Saver: checkpoint.NewMemory()}
	var direct, viaRunner time.Duration
	b.ResetTimer()
	for c := 0; c < n; c += chunk {
		start := time.Now()
		for i := c; i < c+chunk; i++ {
			in := graph.Writes(graph.Append(messages, llm.User("hello there")))
			opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(fmt.Sprint("direct", i))}
			if _, err := g.Invoke(ctx, in, opts...); err != nil {
				b.Fatal(err)
			}
			if _, err := g.GetState(ctx, opts...); err != nil {
				b.Fatal(err)
			}
		}
		direct += time.Since(start)
		ds := &eval.Dataset{Name: "bench", Criteria: crit}
		for i := c; i < c+chunk; i++ {
			ds.Cases = append(ds.Cases, eval.Case{ID: fmt.Sprint("c", i), Input: eval.Input{Message: "hello there"}})
		}
		start = time.Now()
		exp, err := (&eval.Runner{Target: target, Experiment: "bench", Concurrency: 1}).Run(ctx, ds)
		viaRunner += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if exp.Summary.CasesPassed != chunk {
			b.Fatalf("%d of %d cases passed", exp.Summary.CasesPassed, chunk)
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(direct), "direct-ns/case")
	b.ReportMetric(per(viaRunner), "runner-ns/case")
	b.ReportMetric(per(viaRunner-direct), "overhead-ns/case")
	b.ReportMetric(0, "ns/op")
}
