package graph

import (
	"context"

	"github.com/trellis-agents/trellis/store"
)

type taskKey struct{}

func taskFrom(ctx context.Context) *task {
	t, _ := ctx.Value(taskKey{}).(*task)
	return t
}

// RemainingSteps reports how many more steps the run may take after the
// current one before it hits its step limit: 0 during the last allowed step.
// Outside a node it returns -1. An agent loop reads it to finish gracefully
// instead of failing on the limit.
func RemainingSteps(ctx context.Context) int {
	t := taskFrom(ctx)
	if t == nil {
		return -1
	}
	return t.r.limit - t.r.stepsRun
}

// Step reports the current superstep number (counting from the thread's
// first step), or -1 outside a node.
func Step(ctx context.Context) int {
	if t := taskFrom(ctx); t != nil {
		return t.r.step
	}
	return -1
}

// TaskID reports the running task's deterministic ID, or "" outside a node.
func TaskID(ctx context.Context) string {
	if t := taskFrom(ctx); t != nil {
		return t.ID()
	}
	return ""
}

// ThreadID reports the thread the running task's run checkpoints under
// (WithThread; a nested run's is its parent's), or "" outside a node or in
// a run without a checkpointer. Nodes that keep data of their own per
// thread key it on this.
func ThreadID(ctx context.Context) string {
	if t := taskFrom(ctx); t != nil {
		return t.r.cfg.thread
	}
	return ""
}

// NodeName reports the running node's name, or "" outside a node.
func NodeName(ctx context.Context) string {
	if t := taskFrom(ctx); t != nil {
		return t.node.name
	}
	return ""
}

// Namespace reports the subgraph namespace of the running task ("" in the
// root graph).
func Namespace(ctx context.Context) string {
	if t := taskFrom(ctx); t != nil {
		return t.r.ns
	}
	return ""
}

// Emitting reports whether Emit with ctx would deliver anything: whether
// the running task's run streams custom events (or ctx is a parallel
// durable step's, whose events its node delivers). Passing a value to Emit
// boxes it into an interface, an allocation for any value larger than a
// word, even when nobody listens; a caller that emits per step or builds
// its event at some cost checks Emitting first:
//
//	if graph.Emitting(ctx) {
//		graph.Emit(ctx, Progress{...})
//	}
func Emitting(ctx context.Context) bool {
	if t := taskFrom(ctx); t != nil {
		return t.r.wants(EventCustom)
	}
	if ps := parStepFrom(ctx); ps != nil {
		return ps.t.r.wants(EventCustom)
	}
	return false
}

// Emit sends v to the run's stream as an EventCustom event, stamped with the
// task's step, node, ID and namespace. It does nothing when nobody streams
// custom events (see Emitting to skip building v then). Call it only while
// the node runs.
func Emit(ctx context.Context, v any) {
	if t := taskFrom(ctx); t != nil {
		if t.r.wants(EventCustom) {
			t.emit(Event{Kind: EventCustom, Custom: v})
		}
	} else if ps := parStepFrom(ctx); ps != nil && ps.t.r.wants(EventCustom) {
		ps.emit(v) // delivered by the node's goroutine
	}
}

// MessageWriter streams model output from a node as EventMessages events.
// The model layer writes tokens, reasoning and tool-call text through it.
type MessageWriter struct{ t *task }

// Messages returns the running task's message writer. Outside a node it
// returns a writer that discards everything.
func Messages(ctx context.Context) MessageWriter { return MessageWriter{taskFrom(ctx)} }

// Enabled reports whether anyone listens, so callers can skip work (such as
// streaming instead of a single call) when nobody does.
func (w MessageWriter) Enabled() bool { return w.t != nil && w.t.r.wants(EventMessages) }

// Write sends one chunk; it does nothing when nobody listens.
func (w MessageWriter) Write(c MessageChunk) {
	if w.Enabled() {
		w.t.emit(Event{Kind: EventMessages, Message: c})
	}
}

// StoreFrom returns the long-term store the run was given with WithStore, or
// nil. A nested run inherits its parent's store.
func StoreFrom(ctx context.Context) store.Store {
	if t := taskFrom(ctx); t != nil {
		return t.r.cfg.store
	}
	if ps := parStepFrom(ctx); ps != nil {
		return ps.t.r.cfg.store
	}
	return nil
}
