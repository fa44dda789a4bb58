package workflow

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/graph"
)

// Final is what a workflow made with NewFinal returns: Value goes to the
// caller (the run's "output"), Save is kept for the thread's next run, whose
// function gets it as prev (LangGraph's entrypoint.final). A chat can so
// return the reply while it keeps the whole history, or a counter return
// a sentence while it keeps the number.
type Final[Out, Save any] struct {
	Value Out
	Save  Save
}

// FinalFunc is the function of a workflow made with NewFinal: prev is the
// Save of the thread's last finished run (nil on the thread's first run,
// and still that one when an interrupted run resumes).
type FinalFunc[In, Out, Save any] func(ctx context.Context, in In, prev *Save) (Final[Out, Save], error)

// NewFinal compiles fn into a workflow whose runs return one value and
// save another for the next run: as New, plus a third key, "previous"
// (Save), which holds the saved value in the thread's state and is
// returned with the workflow (to read it from a snapshot, or to share it
// with a parent graph). The run's output is Final.Value; Final.Save never
// goes to the caller. Everything else — steps, interrupts, streaming, serving,
// subgraph use — is New's.
func NewFinal[In, Out, Save any](name string, fn FinalFunc[In, Out, Save], opts ...graph.RunOption) (*Workflow[In, Out], *graph.Key[Save], error) {
	if fn == nil {
		return nil, nil, fmt.Errorf("workflow %q: the function is nil", name)
	}
	w := newWorkflow[In, Out](name)
	previous := graph.NewKey[Save]("previous")
	node := func(ctx context.Context, s graph.State) (graph.Output, error) {
		in, err := w.inputOf(s)
		if err != nil {
			return nil, err
		}
		var prev *Save
		if p, ok := previous.Lookup(s); ok {
			prev = &p
		}
		f, err := fn(ctx, in, prev)
		if err != nil {
			return nil, err
		}
		return graph.Writes(w.out.Set(f.Value), previous.Set(f.Save)), nil
	}
	if _, err := w.compile(node, []graph.AnyKey{previous}, opts); err != nil {
		return nil, nil, err
	}
	return w, previous, nil
}
