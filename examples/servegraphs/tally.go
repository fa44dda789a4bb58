package main

import (
	"context"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/workflow"
)

// The "tally" graph is a functional workflow (package workflow): input
// {"input": "some text"} counts the text's words in a durable step and
// adds them to the thread's running total, read from the previous run's
// output; the thread's values then hold {"output": {"words": n, "total": t}}.

// Tally is the tally workflow's output.
type Tally struct {
	Words int `json:"words"`
	Total int `json:"total"`
}

// newTally builds the tally workflow's graph; it has no per-assistant
// configuration.
func newTally(context.Context, runs.Assistant) (*graph.Graph, error) {
	w, err := workflow.New("tally", func(ctx context.Context, text string, prev *Tally) (Tally, error) {
		n, err := graph.Durable(ctx, "count", func(context.Context) (int, error) {
			return len(strings.Fields(text)), nil
		})
		if err != nil {
			return Tally{}, err
		}
		t := Tally{Words: n, Total: n}
		if prev != nil {
			t.Total += prev.Total
		}
		graph.Emit(ctx, t)
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	return w.Graph(), nil
}
