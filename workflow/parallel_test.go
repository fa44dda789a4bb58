package workflow_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// Tasks started together and awaited (LangGraph's mapped tasks: call
// several, then wait on their futures) return in call order; an interrupt
// inside one of them stops the workflow, and the resume runs only that
// one again, with the answer, while the finished ones keep their results.
func TestParallelTasksWithAnInterrupt(t *testing.T) {
	var r runs
	w := mustNew(t, "fanout", func(ctx context.Context, items []string, _ *[]string) ([]string, error) {
		var fs []*graph.Future[string]
		for _, it := range items {
			fs = append(fs, graph.Go(ctx, "process", func(ctx context.Context) (string, error) {
				r.add(it)
				if it == "risky" {
					ok, err := graph.Interrupt[bool](ctx, "process "+it+"?")
					if err != nil {
						return "", err
					}
					if !ok {
						return it + ": skipped", nil
					}
				}
				return it + ": done", nil
			}))
		}
		out := make([]string, 0, len(fs))
		for _, f := range fs {
			v, err := f.Wait(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	})
	opts := thread(checkpoint.NewMemory(), "t")
	items := []string{"a", "risky", "b", "c"}
	_, err := w.Invoke(context.Background(), items, opts...)
	ins := interruptsOf(t, err)
	if len(ins) != 1 || string(ins[0].Payload) != `"process risky?"` {
		t.Fatalf("interrupts %+v, want the risky item's", ins)
	}
	got, err := w.Resume(context.Background(), append(opts, graph.WithResume(false))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a: done", "risky: skipped", "b: done", "c: done"}, got); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
	for _, it := range items {
		want := 1
		if it == "risky" {
			want = 2
		}
		if r.get(it) != want {
			t.Errorf("item %s processed %d times, want %d", it, r.get(it), want)
		}
	}
}

// Zero results (false, 0, "", an empty list, a nil pointer) are results:
// saved and returned on the resume without running the task again
// (LangGraph's falsy task returns).
func TestFalsyTaskResults(t *testing.T) {
	var r runs
	w := mustNew(t, "falsy", func(ctx context.Context, _ string, _ *string) (string, error) {
		b, err := task(ctx, &r, "bool", func() (bool, error) { return false, nil })
		if err != nil {
			return "", err
		}
		n, err := task(ctx, &r, "int", func() (int, error) { return 0, nil })
		if err != nil {
			return "", err
		}
		s, err := task(ctx, &r, "string", func() (string, error) { return "", nil })
		if err != nil {
			return "", err
		}
		l, err := task(ctx, &r, "list", func() ([]int, error) { return []int{}, nil })
		if err != nil {
			return "", err
		}
		p, err := task(ctx, &r, "pointer", func() (*int, error) { return nil, nil })
		if err != nil {
			return "", err
		}
		answer, err := graph.Interrupt[string](ctx, "go on?")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%v %v %q %v %v %s", b, n, s, l, p, answer), nil
	})
	opts := thread(checkpoint.NewMemory(), "t")
	_, err := w.Invoke(context.Background(), "x", opts...)
	if len(interruptsOf(t, err)) != 1 {
		t.Fatal("no interrupt")
	}
	got, err := w.Resume(context.Background(), append(opts, graph.WithResume("yes"))...)
	if err != nil {
		t.Fatal(err)
	}
	if want := `false 0 "" [] <nil> yes`; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	for _, k := range []string{"bool", "int", "string", "list", "pointer"} {
		if r.get(k) != 1 {
			t.Errorf("task %s ran %d times, want once", k, r.get(k))
		}
	}
}

// Two tasks running in parallel both ask a person; one resume answering
// both by ID finishes the workflow, and each task ran once before the
// answers and once with them (LangGraph's parallel interrupts in the
// functional API).
func TestParallelTasksBothAskedAtOnce(t *testing.T) {
	var r runs
	w := mustNew(t, "approvals", func(ctx context.Context, who []string, _ *string) (string, error) {
		var fs []*graph.Future[string]
		for _, p := range who {
			fs = append(fs, graph.Go(ctx, "approve", func(ctx context.Context) (string, error) {
				r.add(p)
				ok, err := graph.Interrupt[bool](ctx, "approve as "+p+"?")
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s:%v", p, ok), nil
			}))
		}
		var out string
		for _, f := range fs {
			v, err := f.Wait(ctx)
			if err != nil {
				return "", err
			}
			out += v + " "
		}
		return out, nil
	})
	opts := thread(checkpoint.NewMemory(), "t")
	_, err := w.Invoke(context.Background(), []string{"ann", "bob"}, opts...)
	// The first Wait returns ann's interrupt; bob's is raised too, since
	// the engine waits for both steps before the node stops.
	var ins []graph.InterruptInfo
	if snap, serr := w.Graph().GetState(context.Background(), opts...); serr == nil {
		ins = snap.Interrupts
	}
	_ = interruptsOf(t, err)
	if len(ins) != 2 {
		t.Fatalf("waiting interrupts %+v, want ann's and bob's", ins)
	}
	answers := map[string]any{}
	for _, in := range ins {
		answers[in.ID] = string(in.Payload) == `"approve as ann?"`
	}
	got, err := w.Resume(context.Background(), append(opts, graph.WithResumeMap(answers))...)
	if err != nil {
		t.Fatal(err)
	}
	if got != "ann:true bob:false " {
		t.Errorf("output %q", got)
	}
	if r.get("ann") != 2 || r.get("bob") != 2 {
		t.Errorf("ann ran %d times, bob %d, want 2 each", r.get("ann"), r.get("bob"))
	}
}
