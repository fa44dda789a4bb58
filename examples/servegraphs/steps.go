package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/runs"
)

// The "steps" graph is a slow worker: it takes {"steps": n} and runs one
// step per superstep, each waiting step_ms milliseconds (a run's
// config.configurable.step_ms or context.step_ms, default 200), streaming
// a custom event {"step": i, "of": n} and appending i to "done". Each step
// is checkpointed, so a run can be interrupted, cancelled, rolled back or
// double-texted half way — the service's acceptance suite uses it.

// Limits of the steps graph's input and configuration.
const (
	MaxSteps      = 50
	MaxStepMillis = 5000
)

// StepCount is the number of steps a run asks for; Done holds the steps
// finished, in order, across runs of the thread.
var (
	StepCount = graph.NewKey[int]("steps")
	Done      = graph.NewKey("done", graph.Concat[int]())
)

// stepsConfig is what a run's config.configurable (or context) may set.
type stepsConfig struct {
	StepMillis *int `json:"step_ms"`
}

// stepDelay reads the run's step_ms (default 200 ms, at most MaxStepMillis).
func stepDelay(ctx context.Context) (time.Duration, error) {
	conf, err := graph.RunContext[stepsConfig](ctx)
	if err != nil && !errors.Is(err, graph.ErrNoRunContext) {
		return 0, fmt.Errorf("config.configurable.step_ms: %w", err)
	}
	if conf.StepMillis == nil {
		return 200 * time.Millisecond, nil
	}
	if ms := *conf.StepMillis; ms < 0 || ms > MaxStepMillis {
		return 0, fmt.Errorf("config.configurable.step_ms must be between 0 and %d, got %d", MaxStepMillis, ms)
	}
	return time.Duration(*conf.StepMillis) * time.Millisecond, nil
}

// newSteps builds the steps graph; it has no per-assistant configuration.
func newSteps(context.Context, runs.Assistant) (*graph.Graph, error) {
	b := graph.New(StepCount, Done)
	b.AddNode("step", func(ctx context.Context, s graph.State) (graph.Output, error) {
		n, done := StepCount.Get(s), len(Done.Get(s))
		if n < 1 || n > MaxSteps {
			return nil, fmt.Errorf("input {\"steps\": n} needs n between 1 and %d, got %d", MaxSteps, n)
		}
		delay, err := stepDelay(ctx)
		if err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		i := done + 1
		graph.Emit(ctx, map[string]int{"step": i, "of": n})
		return graph.Writes(graph.Append(Done, i)), nil
	})
	b.SetEntry("step")
	b.AddConditionalEdges("step", func(_ context.Context, s graph.State) (string, error) {
		if len(Done.Get(s)) < StepCount.Get(s) {
			return "again", nil
		}
		return "done", nil
	}, map[string]string{"again": "step", "done": graph.END})
	return b.Compile()
}
