// Package workflow builds a graph from one Go function: a functional
// workflow. The function is plain code — loops, branches, function calls —
// and gets the graph engine's durability through three calls inside it:
//
//   - graph.Durable runs a piece of work (a model call, a payment) as a
//     durable step, saved as soon as it returns, so that the function, run
//     again after an interrupt, a failure or a crash, gets the saved result
//     back instead of repeating the work; graph.Go starts such steps in
//     parallel (wait for each with its Future);
//   - graph.Interrupt asks a person for an answer; the thread stops and is
//     resumed with the answer (Workflow.Resume), re-running the function
//     from the top with its finished steps restored;
//   - graph.Emit streams a value to the run's EventCustom events.
//
// The workflow compiles to an ordinary *graph.Graph of one node, with two
// keys: "input" (In) and "output" (Out). It is checkpointed like any graph
// (pass graph.WithCheckpointer and graph.WithThread), servable by `trellis
// serve` and its library server (register Graph; clients send
// {"input": ...} and read "output"), and usable inside other graphs:
// invoke it from a node (a nested run, interrupts included) or add Graph
// with graph.Builder.AddSubgraph sharing its Input and Output keys.
//
// Short-term memory: the function's prev argument is the output of the
// thread's last finished run (nil on a thread's first run), so a chat or a
// counter goes on where the previous run left it. To return one value and
// keep another for the next run, use NewFinal.
package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/graph"
)

// Func is a workflow's function. in is the run's input, prev the output of
// the thread's previous finished run (nil if none). The function may be
// run several times for one run — after an interrupt, a failure, a retry
// or a crash — so the work it must not repeat goes in graph.Durable steps,
// and the code between them must take the same path each time (see
// graph.NonDeterminismError).
type Func[In, Out any] func(ctx context.Context, in In, prev *Out) (Out, error)

// Workflow is a compiled functional workflow. It is safe for concurrent use
// by runs on different threads.
type Workflow[In, Out any] struct {
	name  string
	g     *graph.Graph
	input *graph.Key[In]
	out   *graph.Key[Out]
}

// New compiles fn into a workflow named name (also the name of its graph
// and of its one node). opts are the graph's default run options, such as
// graph.WithCheckpointer; each run can add its own. In and Out must encode
// as JSON, as every checkpointed value.
func New[In, Out any](name string, fn Func[In, Out], opts ...graph.RunOption) (*Workflow[In, Out], error) {
	if fn == nil {
		return nil, fmt.Errorf("workflow %q: the function is nil", name)
	}
	w := newWorkflow[In, Out](name)
	node := func(ctx context.Context, s graph.State) (graph.Output, error) {
		in, err := w.inputOf(s)
		if err != nil {
			return nil, err
		}
		var prev *Out
		if p, ok := w.out.Lookup(s); ok {
			prev = &p
		}
		out, err := fn(ctx, in, prev)
		if err != nil {
			return nil, err
		}
		return graph.Writes(w.out.Set(out)), nil
	}
	return w.compile(node, nil, opts)
}

func newWorkflow[In, Out any](name string) *Workflow[In, Out] {
	return &Workflow[In, Out]{
		name:  name,
		input: graph.NewKey[In]("input"),
		out:   graph.NewKey[Out]("output"),
	}
}

// inputOf reads the run's input.
func (w *Workflow[In, Out]) inputOf(s graph.State) (In, error) {
	in, ok := w.input.Lookup(s)
	if !ok {
		return in, fmt.Errorf("workflow %q: the run has no input; start it with Workflow.Invoke or an update setting the %q key", w.name, w.input.Name())
	}
	return in, nil
}

// compile builds the workflow's graph: its keys (and extra), one node.
func (w *Workflow[In, Out]) compile(node graph.NodeFunc, extra []graph.AnyKey, opts []graph.RunOption) (*Workflow[In, Out], error) {
	if w.name == "" {
		return nil, errors.New("workflow: a workflow needs a name")
	}
	b := graph.New(append([]graph.AnyKey{w.input, w.out}, extra...)...)
	b.SetName(w.name)
	b.AddNode(w.name, node)
	b.SetEntry(w.name)
	b.AddEdge(w.name, graph.END)
	g, err := b.Compile(opts...)
	if err != nil {
		return nil, fmt.Errorf("workflow %q: %w", w.name, err)
	}
	w.g = g
	return w, nil
}

// Name returns the workflow's name.
func (w *Workflow[In, Out]) Name() string { return w.name }

// Graph returns the compiled graph, to serve, stream, inspect (GetState,
// history) or add to another graph.
func (w *Workflow[In, Out]) Graph() *graph.Graph { return w.g }

// InputKey is the key ("input") the run's input is written to; a parent
// graph that adds Graph as a subgraph writes it.
func (w *Workflow[In, Out]) InputKey() *graph.Key[In] { return w.input }

// OutputKey is the key ("output") the function's result is written to,
// which is also prev on the thread's next run.
func (w *Workflow[In, Out]) OutputKey() *graph.Key[Out] { return w.out }

// Input returns the update that starts a run with in, for Graph().Stream
// and Graph().Invoke.
func (w *Workflow[In, Out]) Input(in In) graph.Update { return graph.Writes(w.input.Set(in)) }

// Output reads the workflow's output from a state (a Result's or a
// snapshot's); false when no run has finished yet.
func (w *Workflow[In, Out]) Output(s graph.State) (Out, bool) { return w.out.Lookup(s) }

// Invoke runs the workflow on in and returns its output. A run that stops
// for an interrupt returns an error wrapping graph.ErrInterrupted (an
// *graph.InterruptError listing the interrupts); answer with Resume.
// Called from inside a graph node, the run is nested in that node's task
// (see graph.Graph.Invoke).
func (w *Workflow[In, Out]) Invoke(ctx context.Context, in In, opts ...graph.RunOption) (Out, error) {
	return w.run(ctx, w.Input(in), opts)
}

// Resume goes on with the thread's interrupted or failed run: pass the
// answer with graph.WithResume (or graph.WithResumeMap), and the thread
// with graph.WithThread unless the graph has one.
func (w *Workflow[In, Out]) Resume(ctx context.Context, opts ...graph.RunOption) (Out, error) {
	return w.run(ctx, nil, opts)
}

func (w *Workflow[In, Out]) run(ctx context.Context, input graph.Update, opts []graph.RunOption) (Out, error) {
	var zero Out
	res, err := w.g.Invoke(ctx, input, opts...)
	if err != nil {
		return zero, err
	}
	out, ok := w.out.Lookup(res.State)
	if !ok {
		return zero, fmt.Errorf("workflow %q: the run ended without an output", w.name)
	}
	return out, nil
}
