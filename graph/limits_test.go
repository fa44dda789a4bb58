package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

// loopGraph is an agent/tools loop that ends after `turns` rounds: it takes
// exactly 2*turns steps.
func loopGraph(t *testing.T, turns int, remaining *[]int) *graph.Graph {
	count := graph.NewKey("count", graph.Sum[int]())
	b := graph.New(count)
	b.AddNode("agent", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		if remaining != nil {
			*remaining = append(*remaining, graph.RemainingSteps(ctx))
		}
		return graph.Writes(count.Set(1)), nil
	})
	b.AddNode("tools", writeNode())
	b.SetEntry("agent")
	b.AddConditionalEdges("agent", func(_ context.Context, s graph.State) (string, error) {
		if count.Get(s) >= turns {
			return "done", nil
		}
		return "tools", nil
	}, map[string]string{"tools": "tools", "done": graph.END})
	b.AddEdge("tools", "agent")
	return mustCompile(t, b)
}

func TestStepLimit(t *testing.T) {
	const turns = 5 // agent,tools ×4 then agent: 9 steps
	g := loopGraph(t, turns, nil)
	res, err := g.Invoke(context.Background(), nil, graph.WithStepLimit(9))
	if err != nil {
		t.Fatalf("limit exactly met: %v", err)
	}
	if res.Steps != 9 || res.Status != graph.StatusCompleted {
		t.Fatalf("steps = %d, status %v; want 9, completed", res.Steps, res.Status)
	}
	res, err = g.Invoke(context.Background(), nil, graph.WithStepLimit(8))
	var sle *graph.StepLimitError
	if !errors.As(err, &sle) {
		t.Fatalf("limit exceeded by one: err = %v, want *StepLimitError", err)
	}
	want := []graph.NodeCount{{Node: "agent", Runs: 4}, {Node: "tools", Runs: 4}}
	if d := cmp.Diff(want, sle.Repeating); d != "" {
		t.Errorf("repeating (-want +got):\n%s", d)
	}
	for _, w := range []string{"step limit of 8", "agent ×4", "tools ×4", "graph.WithStepLimit", `["agent"] still to run`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if res.Steps != 8 || res.Status != graph.StatusFailed {
		t.Errorf("steps = %d, status %v; want 8, failed", res.Steps, res.Status)
	}
}

func TestDefaultStepLimitAndBadLimit(t *testing.T) {
	g := loopGraph(t, 1000, nil)
	_, err := g.Invoke(context.Background(), nil)
	var sle *graph.StepLimitError
	if !errors.As(err, &sle) || sle.Limit != graph.DefaultStepLimit {
		t.Fatalf("err = %v, want the default limit %d", err, graph.DefaultStepLimit)
	}
	if _, err := g.Invoke(context.Background(), nil, graph.WithStepLimit(-1)); err == nil {
		t.Fatal("a negative step limit was accepted")
	}
}

func TestRemainingSteps(t *testing.T) {
	var got []int
	g := loopGraph(t, 3, &got) // agent runs at steps 1, 3, 5
	if _, err := g.Invoke(context.Background(), nil, graph.WithStepLimit(5)); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int{4, 2, 0}, got); d != "" {
		t.Errorf("remaining steps (-want +got):\n%s", d)
	}
	if graph.RemainingSteps(context.Background()) != -1 {
		t.Error("RemainingSteps outside a node is not -1")
	}
}

type httpErr int

func (e httpErr) Error() string   { return fmt.Sprintf("http %d", int(e)) }
func (e httpErr) StatusCode() int { return int(e) }

func retryGraph(t *testing.T, p graph.RetryPolicy, fail func(attempt int) error, attempts *[]time.Duration) *graph.Graph {
	n := 0
	start := time.Now()
	b := graph.New()
	b.AddNode("flaky", func(context.Context, graph.State) (graph.Output, error) {
		n++
		*attempts = append(*attempts, time.Since(start))
		return nil, fail(n)
	}, graph.WithRetry(p))
	b.SetEntry("flaky")
	b.AddEdge("flaky", graph.END)
	return mustCompile(t, b)
}

func TestRetry(t *testing.T) {
	p := graph.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Second, BackoffFactor: 3, MaxInterval: 5 * time.Second}
	tests := []struct {
		name    string
		policy  graph.RetryPolicy
		fail    func(int) error
		wantAt  []time.Duration
		wantErr bool
	}{
		{"transient then success", p, func(n int) error {
			if n < 4 {
				return httpErr(503)
			}
			return nil
		}, []time.Duration{0, time.Second, 4 * time.Second, 9 * time.Second}, false},
		{"gives up after max attempts", p, func(int) error { return httpErr(429) },
			[]time.Duration{0, time.Second, 4 * time.Second, 9 * time.Second}, true},
		{"programming error not retried", p, func(int) error { return errors.New("nil pointer in my code") },
			[]time.Duration{0}, true},
		{"client error not retried", p, func(int) error { return httpErr(400) }, []time.Duration{0}, true},
		{"custom predicate", graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Minute, RetryOn: func(err error) bool {
			return strings.Contains(err.Error(), "again")
		}}, func(int) error { return errors.New("try again") }, []time.Duration{0, time.Minute}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var at []time.Duration
				res, err := retryGraph(t, tc.policy, tc.fail, &at).Invoke(context.Background(), nil)
				if (err != nil) != tc.wantErr {
					t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
				}
				if d := cmp.Diff(tc.wantAt, at); d != "" {
					t.Errorf("attempt times (-want +got):\n%s", d)
				}
				if err == nil && res.Path[0].Attempts != len(tc.wantAt) {
					t.Errorf("path records %d attempts, want %d", res.Path[0].Attempts, len(tc.wantAt))
				}
			})
		})
	}
}

func TestRetryJitterStaysInRange(t *testing.T) {
	p := graph.RetryPolicy{MaxAttempts: 2, InitialInterval: 10 * time.Second, Jitter: true}
	synctest.Test(t, func(t *testing.T) {
		for range 20 {
			var at []time.Duration
			_, err := retryGraph(t, p, func(n int) error {
				if n == 1 {
					return httpErr(502)
				}
				return nil
			}, &at).Invoke(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if at[1] < 5*time.Second || at[1] > 10*time.Second {
				t.Fatalf("jittered wait %v outside [5s, 10s]", at[1])
			}
		}
	})
}

func TestIsTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{httpErr(500), true}, {httpErr(429), true}, {httpErr(404), false},
		{fmt.Errorf("wrapped: %w", httpErr(503)), true},
		{context.Canceled, false}, {errors.New("boom"), false}, {nil, false},
	}
	for _, tc := range tests {
		if got := graph.IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// blockers returns n parallel nodes that signal started and block until
// their context ends.
func blockers(b *graph.Builder, names []string, started chan<- string) {
	for _, n := range names {
		b.AddNode(n, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			started <- n
			<-ctx.Done()
			return nil, ctx.Err()
		})
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
}

func TestCancelMidStep(t *testing.T) {
	started := make(chan string, 2)
	b := graph.New()
	blockers(b, []string{"a", "b"}, started)
	g := mustCompile(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; <-started; cancel() }()
	res, err := g.Invoke(ctx, nil)
	if !errors.Is(err, context.Canceled) || res.Status != graph.StatusCancelled {
		t.Fatalf("err = %v, status %v; want context.Canceled, cancelled", err, res.Status)
	}
}

func TestFirstFailureCancelsSiblings(t *testing.T) {
	started := make(chan string, 2)
	boom := errors.New("boom")
	b := graph.New()
	blockers(b, []string{"waiter"}, started)
	b.AddNode("failer", func(context.Context, graph.State) (graph.Output, error) {
		<-started // fail once the sibling runs
		return nil, boom
	})
	b.AddEdge(graph.START, "failer")
	b.AddEdge("failer", graph.END)
	_, err := mustCompile(t, b).Invoke(context.Background(), nil)
	var ne *graph.NodeError
	if !errors.Is(err, boom) || !errors.As(err, &ne) || ne.Node != "failer" || ne.Step != 1 {
		t.Fatalf("err = %v, want failer's error", err)
	}
}

func TestTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan string, 1)
		b := graph.New()
		blockers(b, []string{"slow"}, started)
		_, err := mustCompile(t, b).Invoke(context.Background(), nil, graph.WithTimeout(time.Minute))
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("run timeout: err = %v", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := graph.New()
		b.AddNode("slow", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, graph.Timeout(time.Second))
		b.SetEntry("slow")
		b.AddEdge("slow", graph.END)
		start := time.Now()
		_, err := mustCompile(t, b).Invoke(context.Background(), nil)
		var ne *graph.NodeError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || time.Since(start) != time.Second {
			t.Fatalf("node timeout: err = %v after %v", err, time.Since(start))
		}
	})
}

func TestMaxConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cur, peak atomic.Int32
		b := graph.New()
		for i := range 10 {
			n := fmt.Sprintf("n%d", i)
			b.AddNode(n, func(context.Context, graph.State) (graph.Output, error) {
				c := cur.Add(1)
				for {
					p := peak.Load()
					if c <= p || peak.CompareAndSwap(p, c) {
						break
					}
				}
				time.Sleep(time.Second)
				cur.Add(-1)
				return nil, nil
			})
			b.AddEdge(graph.START, n)
			b.AddEdge(n, graph.END)
		}
		start := time.Now()
		if _, err := mustCompile(t, b).Invoke(context.Background(), nil, graph.WithMaxConcurrency(3)); err != nil {
			t.Fatal(err)
		}
		if peak.Load() != 3 || time.Since(start) != 4*time.Second {
			t.Fatalf("peak concurrency %d over %v; want 3 over 4s", peak.Load(), time.Since(start))
		}
	})
}

func TestPanicBecomesNodeError(t *testing.T) {
	b := graph.New()
	b.AddNode("bad", func(context.Context, graph.State) (graph.Output, error) { panic("kaput") },
		graph.WithRetry(graph.RetryPolicy{RetryOn: func(error) bool { return true }}))
	b.SetEntry("bad")
	b.AddEdge("bad", graph.END)
	res, err := mustCompile(t, b).Invoke(context.Background(), nil)
	var pe *graph.PanicError
	if !errors.As(err, &pe) || pe.Value != "kaput" {
		t.Fatalf("err = %v", err)
	}
	if res.Status != graph.StatusFailed {
		t.Errorf("status = %v", res.Status)
	}
}
