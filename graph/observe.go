package graph

import "context"

// Observer watches a run's units of work as they happen: each step, each
// task, and the model and tool calls nodes make (llm.Call and the tool node
// report theirs with Observe). It is how tracing and metrics see inside a
// run without the engine knowing about them; install one with
// WithObserver. Unlike stream events, which reach the consumer later and
// elsewhere, Start runs on the goroutine doing the work, before it, and
// the context it returns is the one the work runs with, so an observer can
// put a trace span in it that the work's own calls are nested under.
//
// Start must be safe for concurrent use (the tasks of a step run in
// parallel) and quick: it runs on the hot path. The end function it
// returns is called once, when the work stops, on the goroutine that did
// it.
type Observer interface {
	Start(ctx context.Context, op Op) (context.Context, func(OpEnd))
}

// OpKind says what unit of work an Op is.
type OpKind uint8

// Kinds of work an Observer sees.
const (
	// OpStep is a superstep that executes tasks (steps whose tasks all
	// finished in an earlier run are not reported).
	OpStep OpKind = iota + 1
	// OpTask is one execution of a node, retries included.
	OpTask
	// OpModelCall is one model call (llm.Call).
	OpModelCall
	// OpToolCall is one tool call of the tool node.
	OpToolCall
)

func (k OpKind) String() string {
	switch k {
	case OpStep:
		return "step"
	case OpTask:
		return "task"
	case OpModelCall:
		return "model-call"
	case OpToolCall:
		return "tool-call"
	}
	return "unknown"
}

// Op describes work that starts. Step and Namespace locate it; Node and
// TaskID name the task it is or runs in (empty for a step).
type Op struct {
	Kind      OpKind
	Step      int
	Namespace string
	Node      string
	TaskID    string
	// Tasks is how many tasks the step executes (OpStep).
	Tasks int
	// Model is the model's name (OpModelCall).
	Model string
	// Tool and CallID name the tool and the call (OpToolCall).
	Tool   string
	CallID string
}

// OpEnd describes work that stopped.
type OpEnd struct {
	// Err is the work's error, nil when it succeeded.
	Err error
	// Task is what EventTaskEnd carries about the task (OpTask).
	Task TaskInfo
	// Usage is the call's usage (OpModelCall).
	Usage Usage
	// FinishReason says why the model stopped ("stop", "tool_calls",
	// "length"...) and ResponseModel is the model that answered as the
	// provider names it, when it says (OpModelCall).
	FinishReason  string
	ResponseModel string
}

// WithObserver installs an observer of the run's steps, tasks and calls
// (see Observer). Graphs the run's nodes invoke, subgraphs included, are
// observed by it too.
func WithObserver(o Observer) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().observer = o })
}

func noEnd(OpEnd) {}

// Observe reports work that starts inside a node (a model or tool call) to
// the run's Observer, filling in the op's step, namespace, node and task.
// The caller does the work with the returned context and calls end when
// it stops. Outside a node, or when the run has no observer, it returns
// ctx and an end that does nothing, at the cost of a context lookup.
func Observe(ctx context.Context, op Op) (context.Context, func(OpEnd)) {
	t := taskFrom(ctx)
	if t == nil {
		return ctx, noEnd
	}
	o := t.r.cfg.get().observer
	if o == nil {
		return ctx, noEnd
	}
	op.Step, op.Namespace, op.Node, op.TaskID = t.step, t.r.ns, t.node.name, t.ID()
	return o.Start(ctx, op)
}

// observer is the run's observer, nil without one.
func (r *run) observer() Observer { return r.cfg.get().observer }
