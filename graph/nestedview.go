package graph

import "context"

// What a node can know about the graphs it would invoke: whether anyone
// receives their events, whether their namespace is certainly empty, and
// whether the run is observed. A node that could do a nested run's work in
// place (agent/planexec's toolless steps ask their model in the step's
// task) reads these to do so only when nobody could tell the difference.

// WithoutSubgraphEvents makes the run deliver no events of the runs nested
// in it (subgraph nodes, graphs its nodes invoke) but their interrupts:
// for a caller whose stream drops events with a Namespace, as the server
// does for a run without stream_subgraphs. Nested runs then do not build
// those events at all (a nested model call, for one, does not stream its
// tokens), and NestedEvents says so to the nodes that ask.
func WithoutSubgraphEvents() RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().noNested = true })
}

// nestedKinds is the event kinds a run nested in r delivers (see
// WithoutSubgraphEvents): r's own, or only interrupts.
func (r *run) nestedKinds() EventKind {
	if r.cfg.get().noNested {
		return r.kinds & EventInterrupt
	}
	return r.kinds
}

// NestedEvents reports the event kinds a graph invoked from the running
// task (Invoke, without WithEvents) would deliver to the run's stream: the
// run's own kinds, or only EventInterrupt under WithoutSubgraphEvents (0
// when nobody streams). Outside a node it returns 0.
func NestedEvents(ctx context.Context) EventKind {
	t := taskFrom(ctx)
	if t == nil {
		return 0
	}
	return t.r.nestedKinds()
}

// FreshNamespace reports whether the namespace a graph invoked now from
// the running task would checkpoint in is certainly empty: no earlier
// attempt of the task, and no earlier run of the thread, can have saved
// there (see task.freshChild), or the run has no checkpointer, so nothing
// is saved at all. A node that does a nested run's work in place reads it
// so that a task resumed after a crash still finds what its earlier
// attempt saved. Unlike the nested run's own check, asking marks nothing.
// Outside a node it returns false.
func FreshNamespace(ctx context.Context) bool {
	t := taskFrom(ctx)
	if t == nil {
		return false
	}
	if t.r.cfg.saver == nil {
		return true
	}
	childMu.Lock()
	first := !t.child
	childMu.Unlock()
	return first && t.childUnsaved()
}

// Observing reports whether the running task's run has an Observer (see
// WithObserver), which sees every operation Observe starts with its node
// and namespace. Outside a node it returns false.
func Observing(ctx context.Context) bool {
	t := taskFrom(ctx)
	return t != nil && t.r.observer() != nil
}
