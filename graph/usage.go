package graph

import (
	"context"
	"sync"
)

// Usage counts what model calls cost: tokens and requests. Model code
// reports it with RecordUsage; the run sums it per task (Result.Path,
// EventTaskEnd), per node (Result.NodeUsage) and in total (Result.Usage).
type Usage struct {
	// InputTokens counts prompt tokens, cached ones included.
	InputTokens int64 `json:"input_tokens,omitempty"`
	// CachedInputTokens is the part of InputTokens served from a
	// provider's prompt cache.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	// OutputTokens counts generated tokens, reasoning included.
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// ReasoningTokens is the part of OutputTokens spent on reasoning.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
	// Requests counts model requests (retries and correction attempts
	// each count).
	Requests int64 `json:"requests,omitempty"`
}

// Add returns the field-wise sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
		Requests:          u.Requests + v.Requests,
	}
}

// IsZero reports whether nothing was counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// TotalTokens is InputTokens + OutputTokens.
func (u Usage) TotalTokens() int64 { return u.InputTokens + u.OutputTokens }

// usageLedger is a run's record of the usage of its running tasks. It
// lives on the run, not the task, so the task struct (allocated for every
// node execution) stays small; RecordUsage is rare next to node steps. A
// task's entry is taken when its step commits, before the task's memory
// can be reused.
type usageLedger struct {
	mu    sync.Mutex
	tasks map[*task]Usage
	nodes map[string]Usage // taken from tasks at each commit: the run's per-node totals
}

// ledger returns the run's usage ledger, allocating it on first use (most
// runs call no model and never pay for it).
func (r *run) ledger() *usageLedger {
	if l := r.usage.Load(); l != nil {
		return l
	}
	r.usage.CompareAndSwap(nil, &usageLedger{tasks: make(map[*task]Usage)})
	return r.usage.Load()
}

// RecordUsage adds u to the running task's usage, and to the tasks of every
// run it is nested in, so a node's usage includes its subgraphs' and the
// graphs it invokes. Outside a node it does nothing. llm.Call records every
// model call's usage itself; call this only for models called some other
// way. Call it before the node returns: usage recorded later is lost.
func RecordUsage(ctx context.Context, u Usage) {
	for t := taskFrom(ctx); t != nil; t = t.r.parent {
		l := t.r.ledger()
		l.mu.Lock()
		l.tasks[t] = l.tasks[t].Add(u)
		l.mu.Unlock()
	}
}

// usageOf returns the task's usage so far.
func (t *task) usageOf() Usage {
	l := t.r.usage.Load()
	if l == nil {
		return Usage{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tasks[t]
}

// settleUsage moves the usage of a committed step's task from the task to
// its node's total, before the task's memory can be reused.
func (t *task) settleUsage() {
	if l := t.r.usage.Load(); l != nil {
		t.settle(l)
	}
}

// settle is settleUsage once a node recorded usage in the run, kept apart
// so that settleUsage inlines.
func (t *task) settle(l *usageLedger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, ok := l.tasks[t]
	if !ok {
		return
	}
	delete(l.tasks, t)
	if l.nodes == nil {
		l.nodes = make(map[string]Usage)
	}
	l.nodes[t.node.name] = l.nodes[t.node.name].Add(u)
}

// nodeUsage returns the run's per-node totals (nil when no model was called).
func (r *run) nodeUsage() map[string]Usage {
	l := r.usage.Load()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes
}

// Usage returns what the run's model calls cost in total: the sum of
// NodeUsage. It covers this Invoke only; a resumed thread's earlier runs
// are not included.
func (res *Result) Usage() Usage {
	var total Usage
	for _, u := range res.NodeUsage {
		total = total.Add(u)
	}
	return total
}
