package graph

import (
	"context"
	"sync"
)

// Usage counts what model calls cost: tokens and requests. Model code
// reports it with RecordUsage; the run sums it per task (Result.Path,
// EventTaskEnd) and in total (Result.Usage).
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

// usageAcc is a task's usage, allocated on the first RecordUsage so tasks
// that call no model stay small. A node may call models from several
// goroutines, hence the lock.
type usageAcc struct {
	mu sync.Mutex
	u  Usage
}

// RecordUsage adds u to the running task's usage, and to the tasks of every
// run it is nested in, so a node's usage includes its subgraphs' and the
// graphs it invokes. Outside a node it does nothing. llm.Call records every
// model call's usage itself; call this only for models called some other way.
func RecordUsage(ctx context.Context, u Usage) {
	for t := taskFrom(ctx); t != nil; t = t.r.parent {
		acc := t.usage.Load()
		if acc == nil {
			acc = new(usageAcc)
			if !t.usage.CompareAndSwap(nil, acc) {
				acc = t.usage.Load()
			}
		}
		acc.mu.Lock()
		acc.u = acc.u.Add(u)
		acc.mu.Unlock()
	}
}

// usageOf returns the task's usage so far.
func (t *task) usageOf() Usage {
	acc := t.usage.Load()
	if acc == nil {
		return Usage{}
	}
	acc.mu.Lock()
	defer acc.mu.Unlock()
	return acc.u
}
