package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Evaluator scores what a case's run did. Implementations must be safe for
// concurrent use: the runner scores cases in parallel.
type Evaluator interface {
	// Name is the evaluator's registered name, used in results.
	Name() string
	// Evaluate scores one trial. An error means the evaluator could not
	// score (a judge model failed), not that the case failed; the runner
	// records it and counts the case as failed for this criterion.
	Evaluate(ctx context.Context, t Trial) (Score, error)
}

// Trial is one repetition of one case, finished, as the evaluator sees it.
type Trial struct {
	// Case is the case, with its expectations.
	Case *Case
	// Repetition counts from 0.
	Repetition int
	// Thread is what the run stored.
	Thread *Thread
}

// Score is an evaluator's verdict on a trial.
type Score struct {
	// Value is in [0, 1]; a case passes a criterion when Value reaches its
	// threshold.
	Value float64 `json:"value"`
	// Explanation says why, in a sentence a person can act on (for a judge,
	// its reasoning).
	Explanation string `json:"explanation,omitempty"`
}

// Factory builds an evaluator from a criterion's params.
type Factory func(params json.RawMessage) (Evaluator, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes an evaluator available to datasets by name. It panics on a
// duplicate name or a nil factory, as database/sql.Register does: both are
// programming errors found at start-up.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if f == nil {
		panic("eval: Register factory is nil for " + name)
	}
	if _, dup := registry[name]; dup {
		panic("eval: Register called twice for " + name)
	}
	registry[name] = f
}

// New builds the evaluator a criterion names.
func New(c Criterion) (Evaluator, error) {
	registryMu.RLock()
	f, ok := registry[c.Evaluator]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("eval: no evaluator %q (registered: %v)", c.Evaluator, Evaluators())
	}
	e, err := f(c.Params)
	if err != nil {
		return nil, fmt.Errorf("eval: evaluator %q: %w", c.Evaluator, err)
	}
	return e, nil
}

// Evaluators lists the registered evaluator names, sorted.
func Evaluators() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ThresholdOrDefault is the score a criterion requires: its Threshold, or 1.
func (c Criterion) ThresholdOrDefault() float64 {
	if c.Threshold == nil {
		return 1
	}
	return *c.Threshold
}
