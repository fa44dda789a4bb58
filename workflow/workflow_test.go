package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/workflow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runs counts how often each piece of work really ran.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runs) add(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[k]++
}

func (r *runs) get(k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[k]
}

// task is a durable step that counts its runs and returns f(in).
func task[T any](ctx context.Context, r *runs, name string, f func() (T, error)) (T, error) {
	return graph.Durable(ctx, name, func(context.Context) (T, error) {
		r.add(name)
		return f()
	})
}

func mustNew[In, Out any](t *testing.T, name string, fn workflow.Func[In, Out], opts ...graph.RunOption) *workflow.Workflow[In, Out] {
	t.Helper()
	w, err := workflow.New(name, fn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func thread(s checkpoint.Saver, id string) []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(s), graph.WithThread(id)}
}

func interruptsOf(t *testing.T, err error) []graph.InterruptInfo {
	t.Helper()
	var ie *graph.InterruptError
	if !errors.As(err, &ie) || !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("err = %v, want an interrupt", err)
	}
	return ie.Interrupts
}

// An essay workflow: write (a task), ask a person to review, then publish
// (a task). The task before the interrupt runs once across the interrupt
// and the resume; the one after runs once, after the answer.
func TestTasksAroundAnInterrupt(t *testing.T) {
	var r runs
	type review struct {
		OK   bool   `json:"ok"`
		Note string `json:"note"`
	}
	w := mustNew(t, "essay", func(ctx context.Context, topic string, _ *string) (string, error) {
		essay, err := task(ctx, &r, "write", func() (string, error) { return "an essay about " + topic, nil })
		if err != nil {
			return "", err
		}
		rev, err := graph.Interrupt[review](ctx, map[string]string{"essay": essay})
		if err != nil {
			return "", err
		}
		if !rev.OK {
			return "rejected: " + rev.Note, nil
		}
		return task(ctx, &r, "publish", func() (string, error) { return "published " + essay + " (" + rev.Note + ")", nil })
	})
	saver := checkpoint.NewMemory()
	ctx := context.Background()
	_, err := w.Invoke(ctx, "cats", thread(saver, "t1")...)
	ins := interruptsOf(t, err)
	if len(ins) != 1 || string(ins[0].Payload) != `{"essay":"an essay about cats"}` || ins[0].Node != "essay" {
		t.Fatalf("interrupts = %+v", ins)
	}
	out, err := w.Resume(ctx, append(thread(saver, "t1"), graph.WithResume(review{OK: true, Note: "fine"}))...)
	if err != nil {
		t.Fatal(err)
	}
	if want := "published an essay about cats (fine)"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if r.get("write") != 1 || r.get("publish") != 1 {
		t.Errorf("write ran %d times, publish %d; want once each", r.get("write"), r.get("publish"))
	}
	// The thread is checkpointed like any graph's: its state holds the
	// input and the output, and nothing waits.
	snap, err := w.Graph().GetState(ctx, thread(saver, "t1")...)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := w.Output(snap.Values); got != out || len(snap.Next) != 0 || w.InputKey().Get(snap.Values) != "cats" {
		t.Errorf("state: output %q, input %q, next %v", got, w.InputKey().Get(snap.Values), snap.Next)
	}
}

// An interrupt inside a task: the task stops with it and is not saved;
// resumed, it runs again and gets the answer, and the task before it does
// not. Two interrupts in a row need two resumes.
func TestInterruptsInsideTasks(t *testing.T) {
	var r runs
	w := mustNew(t, "ask", func(ctx context.Context, in int, _ *[]string) ([]string, error) {
		base, err := task(ctx, &r, "base", func() (int, error) { return in * 10, nil })
		if err != nil {
			return nil, err
		}
		first, err := task(ctx, &r, "first", func() (string, error) {
			a, err := graph.Interrupt[string](ctx, "first?")
			return fmt.Sprintf("%d:%s", base, a), err
		})
		if err != nil {
			return nil, err
		}
		second, err := task(ctx, &r, "second", func() (string, error) {
			a, err := graph.Interrupt[string](ctx, "second?")
			return first + "/" + a, err
		})
		if err != nil {
			return nil, err
		}
		return []string{first, second}, nil
	})
	saver := checkpoint.NewMemory()
	ctx := context.Background()
	_, err := w.Invoke(ctx, 4, thread(saver, "t")...)
	if ins := interruptsOf(t, err); string(ins[0].Payload) != `"first?"` {
		t.Fatalf("first stop: %+v", ins)
	}
	_, err = w.Resume(ctx, append(thread(saver, "t"), graph.WithResume("A"))...)
	if ins := interruptsOf(t, err); string(ins[0].Payload) != `"second?"` {
		t.Fatalf("second stop: %+v", ins)
	}
	out, err := w.Resume(ctx, append(thread(saver, "t"), graph.WithResume("B"))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"40:A", "40:A/B"}, out); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
	// base ran once; each asking task ran once to ask and once with its
	// answer; first did not run again for the second interrupt.
	for name, want := range map[string]int{"base": 1, "first": 2, "second": 2} {
		if r.get(name) != want {
			t.Errorf("%s ran %d times, want %d", name, r.get(name), want)
		}
	}
}

// One task called in a loop: its calls share a name and are told apart by
// their order, so each gets its own saved result back after the
// interrupt, and none runs twice.
func TestSameTaskInALoop(t *testing.T) {
	var r runs
	w := mustNew(t, "pages", func(ctx context.Context, urls []string, _ *[]string) ([]string, error) {
		var pages []string
		for i, u := range urls {
			p, err := task(ctx, &r, "fetch", func() (string, error) { return "page of " + u, nil })
			if err != nil {
				return nil, err
			}
			pages = append(pages, p)
			if i == 1 {
				if _, err := graph.Interrupt[bool](ctx, "fetch more?"); err != nil {
					return nil, err
				}
			}
		}
		return pages, nil
	})
	saver := checkpoint.NewMemory()
	ctx := context.Background()
	_, err := w.Invoke(ctx, []string{"a", "b", "c"}, thread(saver, "l")...)
	interruptsOf(t, err)
	out, err := w.Resume(ctx, append(thread(saver, "l"), graph.WithResume(true))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"page of a", "page of b", "page of c"}, out); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
	if r.get("fetch") != 3 {
		t.Errorf("fetch ran %d times, want 3 (once per URL)", r.get("fetch"))
	}
}

// Short-term memory: prev is the output of the thread's last finished
// run; another thread starts without one.
func TestPreviousIsTheLastOutput(t *testing.T) {
	type tally struct {
		Total int      `json:"total"`
		Seen  []string `json:"seen"`
	}
	var prevs []string
	w := mustNew(t, "tally", func(_ context.Context, in string, prev *tally) (tally, error) {
		if prev == nil {
			prevs = append(prevs, "none")
			return tally{Total: len(in), Seen: []string{in}}, nil
		}
		prevs = append(prevs, fmt.Sprint(prev.Total))
		return tally{Total: prev.Total + len(in), Seen: append(prev.Seen, in)}, nil
	}, graph.WithCheckpointer(checkpoint.NewMemory()))
	ctx := context.Background()
	var last tally
	for _, in := range []string{"a", "bb", "ccc"} {
		var err error
		if last, err = w.Invoke(ctx, in, graph.WithThread("one")); err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff(tally{Total: 6, Seen: []string{"a", "bb", "ccc"}}, last); d != "" {
		t.Errorf("after three runs (-want +got):\n%s", d)
	}
	other, err := w.Invoke(ctx, "dddd", graph.WithThread("two"))
	if err != nil {
		t.Fatal(err)
	}
	if other.Total != 4 {
		t.Errorf("another thread: total %d, want 4 (no previous)", other.Total)
	}
	if d := cmp.Diff([]string{"none", "1", "3", "none"}, prevs); d != "" {
		t.Errorf("prev seen by each run (-want +got):\n%s", d)
	}
}

// The function streams custom events with graph.Emit, in order, and the
// output comes as the node's update; a resumed run does not emit again
// from the tasks it restores.
func TestStreaming(t *testing.T) {
	w := mustNew(t, "progress", func(ctx context.Context, n int, _ *int) (int, error) {
		sum := 0
		for i := range n {
			v, err := graph.Durable(ctx, fmt.Sprint("part", i), func(ctx context.Context) (int, error) {
				graph.Emit(ctx, fmt.Sprintf("part %d of %d", i+1, n))
				return i + 1, nil
			})
			if err != nil {
				return 0, err
			}
			sum += v
		}
		if _, err := graph.Interrupt[bool](ctx, "done?"); err != nil {
			return 0, err
		}
		graph.Emit(ctx, "finished")
		return sum, nil
	})
	saver := checkpoint.NewMemory()
	ctx := context.Background()
	collect := func(in graph.Update, opts ...graph.RunOption) (customs []string, outputs []int, err error) {
		for ev, err := range w.Graph().Stream(ctx, in, append(thread(saver, "s"), append(opts, graph.WithEvents(graph.EventCustom|graph.EventUpdates|graph.EventInterrupt))...)...) {
			if err != nil {
				return customs, outputs, err
			}
			switch ev.Kind {
			case graph.EventInterrupt:
				return customs, outputs, graph.ErrInterrupted
			case graph.EventCustom:
				customs = append(customs, ev.Custom.(string))
				if ev.Node != "progress" {
					t.Errorf("custom event from node %q", ev.Node)
				}
			case graph.EventUpdates:
				if v, ok := w.OutputKey().In(ev.Update); ok {
					outputs = append(outputs, v)
				}
			}
		}
		return customs, outputs, nil
	}
	customs, _, err := collect(w.Input(3))
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("err = %v, want the interrupt", err)
	}
	if d := cmp.Diff([]string{"part 1 of 3", "part 2 of 3", "part 3 of 3"}, customs); d != "" {
		t.Errorf("first run's custom events (-want +got):\n%s", d)
	}
	customs, outputs, err := collect(nil, graph.WithResume(true))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"finished"}, customs); d != "" {
		t.Errorf("resumed run's custom events (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{6}, outputs); d != "" {
		t.Errorf("output updates (-want +got):\n%s", d)
	}
}

// A task that fails fails the run; the thread resumed runs the function
// again, and the tasks that finished before do not run again.
func TestFailedTaskResumes(t *testing.T) {
	var r runs
	down := true
	w := mustNew(t, "order", func(ctx context.Context, item string, _ *string) (string, error) {
		id, err := task(ctx, &r, "charge", func() (string, error) { return "pay-" + item, nil })
		if err != nil {
			return "", err
		}
		return task(ctx, &r, "ship", func() (string, error) {
			if down {
				return "", errors.New("the carrier is down")
			}
			return id + " shipped", nil
		})
	})
	saver := checkpoint.NewMemory()
	ctx := context.Background()
	if _, err := w.Invoke(ctx, "book", thread(saver, "o")...); err == nil || !strings.Contains(err.Error(), "the carrier is down") {
		t.Fatalf("err = %v, want the shipping failure", err)
	}
	down = false
	out, err := w.Resume(ctx, thread(saver, "o")...)
	if err != nil {
		t.Fatal(err)
	}
	if out != "pay-book shipped" || r.get("charge") != 1 || r.get("ship") != 2 {
		t.Errorf("output %q, charge ran %d times (want 1), ship %d (want 2)", out, r.get("charge"), r.get("ship"))
	}
}

// A workflow invoked from a graph node is a nested run: its interrupt
// stops the parent, the parent's resume reaches it, and its tasks run
// once.
func TestCalledFromANode(t *testing.T) {
	var r runs
	inner := mustNew(t, "inner", func(ctx context.Context, in string, _ *string) (string, error) {
		v, err := task(ctx, &r, "prepare", func() (string, error) { return strings.ToUpper(in), nil })
		if err != nil {
			return "", err
		}
		ok, err := graph.Interrupt[bool](ctx, "go on with "+v+"?")
		if err != nil || !ok {
			return "stopped", err
		}
		return v + "!", nil
	})
	result := graph.NewKey[string]("result")
	b := graph.New(result)
	b.AddNode("outer", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		out, err := inner.Invoke(ctx, "hi")
		if err != nil {
			return nil, err
		}
		return graph.Writes(result.Set(out)), nil
	})
	b.SetEntry("outer")
	b.AddEdge("outer", graph.END)
	parent, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory()
	ctx := context.Background()
	res, err := parent.Invoke(ctx, nil, thread(saver, "p")...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 || string(res.Interrupts[0].Payload) != `"go on with HI?"` {
		t.Fatalf("err = %v, interrupts %+v", err, res.Interrupts)
	}
	if ns := res.Interrupts[0].Namespace; !strings.HasPrefix(ns, "outer:") {
		t.Errorf("the interrupt's namespace %q is not the outer task's", ns)
	}
	res, err = parent.Invoke(ctx, nil, append(thread(saver, "p"), graph.WithResume(true))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := result.Get(res.State); got != "HI!" || r.get("prepare") != 1 {
		t.Errorf("result %q (want HI!), prepare ran %d times (want 1)", got, r.get("prepare"))
	}
}

// A workflow added as a subgraph node shares its input and output keys
// with the parent graph.
func TestAsASubgraph(t *testing.T) {
	double := mustNew(t, "double", func(_ context.Context, in int, _ *int) (int, error) { return 2 * in, nil })
	trail := graph.NewKey("trail", graph.Concat[string]())
	b := graph.New(double.InputKey(), double.OutputKey(), trail)
	b.AddNode("pick", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Writes(double.InputKey().Set(21)), nil
	})
	b.AddSubgraph("double", double.Graph())
	b.AddNode("report", func(_ context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(trail, fmt.Sprint("got ", double.OutputKey().Get(s)))), nil
	})
	b.SetEntry("pick")
	b.AddEdge("pick", "double")
	b.AddEdge("double", "report")
	b.AddEdge("report", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"got 42"}, trail.Get(res.State)); d != "" {
		t.Errorf("trail (-want +got):\n%s", d)
	}
}

// Bad construction and a run without input get errors that say what to
// do; a re-run that takes another path between its tasks is reported.
func TestErrors(t *testing.T) {
	if _, err := workflow.New[int, int]("", func(context.Context, int, *int) (int, error) { return 0, nil }); err == nil {
		t.Error("an empty name was accepted")
	}
	if _, err := workflow.New[int, int]("w", nil); err == nil {
		t.Error("a nil function was accepted")
	}
	w := mustNew(t, "w", func(context.Context, int, *int) (int, error) { return 1, nil })
	if _, err := w.Resume(context.Background()); err == nil || !strings.Contains(err.Error(), "no input") {
		t.Errorf("a run without input: err = %v", err)
	}

	flip := false
	fails := true
	nd := mustNew(t, "nd", func(ctx context.Context, _ int, _ *int) (int, error) {
		first := "a"
		if flip {
			first = "b" // a path that changed between runs
		}
		if _, err := graph.Durable(ctx, first, func(context.Context) (int, error) { return 1, nil }); err != nil {
			return 0, err
		}
		if fails {
			return 0, errors.New("fail once")
		}
		return 1, nil
	})
	saver := checkpoint.NewMemory()
	if _, err := nd.Invoke(context.Background(), 1, thread(saver, "nd")...); err == nil {
		t.Fatal("no failure")
	}
	flip, fails = true, false
	_, err := nd.Resume(context.Background(), thread(saver, "nd")...)
	var nde *graph.NonDeterminismError
	if !errors.As(err, &nde) || nde.Saved != "a" || nde.Called != "b" {
		t.Errorf("err = %v, want a NonDeterminismError saved a, called b", err)
	}
}
