package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// counter counts node executions safely across parallel tasks.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func threadOpts(s checkpoint.Saver, thread string) []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(s), graph.WithThread(thread)}
}

var decision = graph.NewKey[string]("decision")

// approvalGraph: ask → act. ask interrupts for approval.
func approvalGraph(t *testing.T, c *counter) *graph.Graph {
	b := graph.New(decision)
	b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		c.add("ask")
		ok, err := graph.Interrupt[bool](ctx, map[string]string{"question": "deploy?"})
		if err != nil {
			return nil, err
		}
		return graph.Writes(decision.Set(fmt.Sprint(ok))), nil
	})
	b.AddNode("act", func(context.Context, graph.State) (graph.Output, error) {
		c.add("act")
		return nil, nil
	})
	b.SetEntry("ask")
	b.AddEdge("ask", "act")
	b.AddEdge("act", graph.END)
	return mustCompile(t, b)
}

func TestInterruptAndResumeInANewRun(t *testing.T) {
	var c counter
	saver := checkpoint.NewMemory()
	opts := threadOpts(saver, "approve")
	res, err := approvalGraph(t, &c).Invoke(context.Background(), nil, opts...)
	if !errors.Is(err, graph.ErrInterrupted) || res.Status != graph.StatusInterrupted {
		t.Fatalf("err = %v, status %v; want interrupted", err, res.Status)
	}
	if len(res.Interrupts) != 1 {
		t.Fatalf("interrupts = %+v", res.Interrupts)
	}
	in := res.Interrupts[0]
	if in.Node != "ask" || !strings.HasSuffix(in.ID, ":0") || string(in.Payload) != `{"question":"deploy?"}` {
		t.Errorf("interrupt = %+v", in)
	}
	if c.get("act") != 0 {
		t.Fatal("the run went past the interrupt")
	}
	// A fresh compiled graph, as another process would have.
	res, err = approvalGraph(t, &c).Invoke(context.Background(), nil, append(opts, graph.WithResume(true))...)
	if err != nil {
		t.Fatal(err)
	}
	if decision.Get(res.State) != "true" || c.get("ask") != 2 || c.get("act") != 1 {
		t.Errorf("decision %q, ask ran %d, act ran %d", decision.Get(res.State), c.get("ask"), c.get("act"))
	}
	// Nothing is waiting any more.
	if _, err := approvalGraph(t, &c).Invoke(context.Background(), nil, append(opts, graph.WithResume(true))...); err == nil ||
		!strings.Contains(err.Error(), "no interrupt waiting") {
		t.Errorf("resuming a finished thread: err = %v", err)
	}
}

func TestInterruptNeedsCheckpointer(t *testing.T) {
	var c counter
	_, err := approvalGraph(t, &c).Invoke(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "no checkpointer") {
		t.Fatalf("err = %v", err)
	}
}

func TestInterruptInStream(t *testing.T) {
	var c counter
	var got []graph.InterruptInfo
	for ev, err := range approvalGraph(t, &c).Stream(context.Background(), nil, threadOpts(checkpoint.NewMemory(), "s")...) {
		if err != nil {
			t.Fatalf("stream yielded error %v for an interrupt", err)
		}
		if ev.Kind == graph.EventInterrupt {
			got = ev.Interrupts
		}
	}
	if len(got) != 1 || got[0].Node != "ask" {
		t.Errorf("interrupt events = %+v", got)
	}
}

var results = graph.NewKey("results", graph.Concat[string]())

// parallelGraph: START → asker1, asker2, worker (parallel) → END.
func parallelGraph(t *testing.T, c *counter) *graph.Graph {
	b := graph.New(results)
	for _, n := range []string{"asker1", "asker2"} {
		b.AddNode(n, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			c.add(n)
			v, err := graph.Interrupt[string](ctx, "value for "+n)
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(results, n+"="+v)), nil
		})
	}
	b.AddNode("worker", func(context.Context, graph.State) (graph.Output, error) {
		c.add("worker")
		return graph.Writes(graph.Append(results, "worked")), nil
	})
	for _, n := range []string{"asker1", "asker2", "worker"} {
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	return mustCompile(t, b)
}

func TestParallelInterrupts(t *testing.T) {
	var c counter
	saver := checkpoint.NewMemory()
	opts := threadOpts(saver, "par")
	g := parallelGraph(t, &c)
	res, err := g.Invoke(context.Background(), nil, opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 2 {
		t.Fatalf("err = %v, interrupts %+v", err, res.Interrupts)
	}
	byNode := map[string]string{}
	for _, in := range res.Interrupts {
		byNode[in.Node] = in.ID
	}
	if byNode["asker1"] == byNode["asker2"] || byNode["asker1"] == "" {
		t.Fatalf("parallel interrupts share an ID: %v", byNode)
	}
	// One answer for two waiting interrupts is ambiguous.
	_, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume("x"))...)
	if err == nil || !strings.Contains(err.Error(), byNode["asker1"]) || !strings.Contains(err.Error(), byNode["asker2"]) {
		t.Fatalf("single answer with two waiting: err = %v, want it to list both", err)
	}
	// An unknown ID is reported with what is waiting.
	_, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{"nope:0": 1}))...)
	if err == nil || !strings.Contains(err.Error(), `"nope:0"`) || !strings.Contains(err.Error(), byNode["asker2"]) {
		t.Fatalf("unknown ID: err = %v", err)
	}
	// Answer only asker1: only it runs again; the run stops for asker2.
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{byNode["asker1"]: "one"}))...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].ID != byNode["asker2"] {
		t.Fatalf("after a partial answer: err = %v, interrupts %+v", err, res.Interrupts)
	}
	if c.get("asker1") != 2 || c.get("asker2") != 1 || c.get("worker") != 1 {
		t.Errorf("calls after partial answer: asker1 %d asker2 %d worker %d", c.get("asker1"), c.get("asker2"), c.get("worker"))
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume("two"))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"asker1=one", "asker2=two", "worked"}, results.Get(res.State)); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	if c.get("asker1") != 2 || c.get("asker2") != 2 || c.get("worker") != 1 {
		t.Errorf("final calls: asker1 %d asker2 %d worker %d; the finished worker must never re-run", c.get("asker1"), c.get("asker2"), c.get("worker"))
	}
}

// A node that asks again until the answer is valid: calls are matched with
// answers by their order.
func TestInterruptLoopUntilValid(t *testing.T) {
	age := graph.NewKey[int]("age")
	b := graph.New(age)
	b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		prompt := "your age?"
		for {
			n, err := graph.Interrupt[int](ctx, prompt)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				return graph.Writes(age.Set(n)), nil
			}
			prompt = fmt.Sprintf("%d is not an age; your age?", n)
		}
	})
	b.SetEntry("ask")
	b.AddEdge("ask", graph.END)
	g := mustCompile(t, b)
	opts := threadOpts(checkpoint.NewMemory(), "loop")
	res, _ := g.Invoke(context.Background(), nil, opts...)
	first := res.Interrupts[0].ID
	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume(-3))...)
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("invalid answer: err = %v", err)
	}
	second := res.Interrupts[0]
	if second.ID == first || !strings.HasSuffix(second.ID, ":1") || !strings.Contains(string(second.Payload), "-3 is not an age") {
		t.Fatalf("second interrupt = %+v (first %s)", second, first)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(42))...)
	if err != nil || age.Get(res.State) != 42 {
		t.Fatalf("age = %d, err = %v", age.Get(res.State), err)
	}
}

func TestAnswerThatDoesNotDecode(t *testing.T) {
	var c counter
	opts := threadOpts(checkpoint.NewMemory(), "bad-answer")
	g := approvalGraph(t, &c)
	_, _ = g.Invoke(context.Background(), nil, opts...)
	_, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume("not a bool"))...)
	if err == nil || !strings.Contains(err.Error(), "does not decode as bool") {
		t.Fatalf("err = %v", err)
	}
}

func TestStaticBreakpoints(t *testing.T) {
	b, log := chainAB()
	g := mustCompile(t, b)
	tests := []struct {
		name string
		opt  graph.RunOption
		want []string // log when the run first stops
	}{
		{"before b", graph.WithInterruptBefore("b"), []string{"a"}},
		{"after a", graph.WithInterruptAfter("a"), []string{"a"}},
		{"before all", graph.WithInterruptBefore(graph.AllNodes), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := append(threadOpts(checkpoint.NewMemory(), "bp"), tc.opt)
			res, err := g.Invoke(context.Background(), nil, opts...)
			if !errors.Is(err, graph.ErrInterrupted) {
				t.Fatalf("err = %v", err)
			}
			if d := cmp.Diff(tc.want, log.Get(res.State)); d != "" {
				t.Errorf("state at the breakpoint (-want +got):\n%s", d)
			}
			// Resuming with a nil input passes the breakpoint (and stops at
			// the next one for "before all").
			for range 3 {
				res, err = g.Invoke(context.Background(), nil, opts...)
				if !errors.Is(err, graph.ErrInterrupted) {
					break
				}
			}
			if err != nil || !cmp.Equal(log.Get(res.State), []string{"a", "b"}) {
				t.Errorf("after resuming: %v, err %v", log.Get(res.State), err)
			}
		})
	}
}

// An interrupt inside a subgraph surfaces with its namespace, and resume
// continues the subgraph where it stopped: its first step does not run again
// and the parent receives the writes of both.
func TestSubgraphInterruptResumesInside(t *testing.T) {
	var c counter
	build := func() *graph.Graph {
		sb := graph.New(sharedLog)
		sb.AddNode("draft", func(context.Context, graph.State) (graph.Output, error) {
			c.add("draft")
			return graph.Writes(graph.Append(sharedLog, "draft")), nil
		})
		sb.AddNode("review", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			c.add("review")
			verdict, err := graph.Interrupt[string](ctx, "approve the draft?")
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(sharedLog, "review:"+verdict)), nil
		})
		sb.SetEntry("draft")
		sb.AddEdge("draft", "review")
		sb.AddEdge("review", graph.END)
		sub := mustCompile(t, sb)
		b := graph.New(sharedLog)
		b.AddNode("start", logNode(sharedLog, "start"))
		b.AddSubgraph("writer", sub)
		b.AddNode("publish", logNode(sharedLog, "publish"))
		b.SetEntry("start")
		b.AddEdge("start", "writer")
		b.AddEdge("writer", "publish")
		b.AddEdge("publish", graph.END)
		return mustCompile(t, b)
	}
	opts := threadOpts(checkpoint.NewMemory(), "sub")
	res, err := build().Invoke(context.Background(), nil, opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("err = %v, interrupts %+v", err, res.Interrupts)
	}
	in := res.Interrupts[0]
	if in.Node != "review" || !strings.HasPrefix(in.Namespace, "writer:") {
		t.Errorf("interrupt = %+v; want node review in namespace writer:<task>", in)
	}
	res, err = build().Invoke(context.Background(), nil, append(opts, graph.WithResume("yes"))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"start", "draft", "review:yes", "publish"}, sharedLog.Get(res.State)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	if c.get("draft") != 1 || c.get("review") != 2 {
		t.Errorf("draft ran %d times, review %d; the subgraph must resume, not restart", c.get("draft"), c.get("review"))
	}
}

// A graph invoked from inside a node inherits the thread, so an interrupt in
// it resumes too.
func TestNestedInvokeInterrupt(t *testing.T) {
	var c counter
	inner := approvalGraph(t, &c)
	b := graph.New(answer)
	b.AddNode("outer", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		res, err := inner.Invoke(ctx, graph.Writes())
		if err != nil {
			return nil, err
		}
		return graph.Writes(answer.Set(decision.Get(res.State))), nil
	})
	b.SetEntry("outer")
	b.AddEdge("outer", graph.END)
	g := mustCompile(t, b)
	opts := threadOpts(checkpoint.NewMemory(), "nested")
	res, err := g.Invoke(context.Background(), nil, opts...)
	if !errors.Is(err, graph.ErrInterrupted) || !strings.HasPrefix(res.Interrupts[0].Namespace, "outer:") {
		t.Fatalf("err = %v, interrupts %+v", err, res.Interrupts)
	}
	payload, _ := json.Marshal(map[string]string{"question": "deploy?"})
	if string(res.Interrupts[0].Payload) != string(payload) {
		t.Errorf("payload = %s", res.Interrupts[0].Payload)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(false))...)
	if err != nil || answer.Get(res.State) != "false" {
		t.Fatalf("answer = %q, err = %v", answer.Get(res.State), err)
	}
	if c.get("act") != 1 || c.get("ask") != 2 {
		t.Errorf("inner calls: ask %d act %d", c.get("ask"), c.get("act"))
	}
}
