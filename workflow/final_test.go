package workflow_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/workflow"
)

// A Final workflow returns its Value to the caller and saves its Save,
// which the thread's next run gets as prev (LangGraph's entrypoint.final):
// the caller never sees the saved number, the next run never sees the
// sentence.
func TestFinalSavesAnotherValue(t *testing.T) {
	var seen []string
	w, previous, err := workflow.NewFinal("tally", func(ctx context.Context, n int, prev *int) (workflow.Final[string, int], error) {
		total := n
		if prev != nil {
			seen = append(seen, fmt.Sprint(*prev))
			total += *prev
		} else {
			seen = append(seen, "nil")
		}
		return workflow.Final[string, int]{Value: fmt.Sprintf("total is %d", total), Save: total}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory()
	opts := thread(saver, "t")
	for i, tc := range []struct {
		in   int
		want string
	}{{3, "total is 3"}, {4, "total is 7"}, {10, "total is 17"}} {
		got, err := w.Invoke(context.Background(), tc.in, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("run %d returned %q, want %q", i, got, tc.want)
		}
	}
	if fmt.Sprint(seen) != "[nil 3 7]" {
		t.Errorf("prev in each run: %v, want [nil 3 7]", seen)
	}
	snap, err := w.Graph().GetState(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := previous.Lookup(snap.Values); v != 17 {
		t.Errorf("saved value %d, want 17", v)
	}
	if out, _ := w.Output(snap.Values); out != "total is 17" {
		t.Errorf("output %q, want the returned sentence", out)
	}
	// Another thread starts from nothing.
	if got, err := w.Invoke(context.Background(), 1, thread(saver, "other")...); err != nil || got != "total is 1" {
		t.Errorf("a new thread: %q, %v", got, err)
	}
}

// A Final workflow interrupted in its second run resumes with the same
// prev (the first run's Save), without repeating its finished step, and
// saves the resumed run's Save.
func TestFinalResumes(t *testing.T) {
	var r runs
	var prevs []int
	w, previous, err := workflow.NewFinal("chat", func(ctx context.Context, msg string, prev *[]string) (workflow.Final[string, []string], error) {
		var history []string
		if prev != nil {
			history = *prev
		}
		prevs = append(prevs, len(history))
		reply, err := task(ctx, &r, "reply:"+msg, func() (string, error) { return "echo " + msg, nil })
		if err != nil {
			return workflow.Final[string, []string]{}, err
		}
		if msg == "pay" {
			ok, err := graph.Interrupt[bool](ctx, "pay?")
			if err != nil {
				return workflow.Final[string, []string]{}, err
			}
			if !ok {
				reply = "not paid"
			}
		}
		return workflow.Final[string, []string]{Value: reply, Save: append(history, msg, reply)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory()
	opts := thread(saver, "t")
	if got, err := w.Invoke(context.Background(), "hi", opts...); err != nil || got != "echo hi" {
		t.Fatalf("first run: %q, %v", got, err)
	}
	_, err = w.Invoke(context.Background(), "pay", opts...)
	if ins := interruptsOf(t, err); len(ins) != 1 {
		t.Fatalf("interrupts %v", ins)
	}
	got, err := w.Resume(context.Background(), append(opts, graph.WithResume(false))...)
	if err != nil || got != "not paid" {
		t.Fatalf("resumed: %q, %v", got, err)
	}
	if r.get("reply:pay") != 1 {
		t.Errorf("the step before the interrupt ran %d times, want once", r.get("reply:pay"))
	}
	if fmt.Sprint(prevs) != "[0 2 2]" {
		t.Errorf("history lengths seen: %v, want [0 2 2] (the resume sees the first run's save)", prevs)
	}
	snap, err := w.Graph().GetState(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := previous.Lookup(snap.Values); fmt.Sprint(h) != "[hi echo hi pay not paid]" {
		t.Errorf("saved history %q", h)
	}
}
