package eval

import (
	"context"
	"encoding/json"

	"github.com/trellis-agents/trellis/llm"
)

// Target is what the runner evaluates: an agent it can start runs on and
// read threads of. Implementations: a compiled graph in-process, and an
// assistant on a Trellis server by URL.
//
// A Target is stateless between calls: every call names its thread, so the
// runner can continue an interrupted experiment and run cases concurrently.
type Target interface {
	// Name says what is evaluated (an assistant and version, a graph), for
	// reports.
	Name() string
	// Run starts or continues a run on req.ThreadID (created when it does
	// not exist) and returns when it finished or waits at interrupts.
	Run(ctx context.Context, req RunRequest) (*RunOutcome, error)
	// Thread reads what the thread stored.
	Thread(ctx context.Context, threadID string) (*Thread, error)
}

// RunRequest is one run of a case: a first input, a further user turn, or
// answers to pending interrupts. Exactly one of Input.Message,
// Input.State and Resume is set.
type RunRequest struct {
	// ThreadID is the case repetition's own thread.
	ThreadID string
	// Input starts the run, or sends a further user turn (Message).
	Input Input
	// Resume answers pending interrupts, by interrupt ID.
	Resume map[string]json.RawMessage
	// Metadata tags the run and thread (experiment, case, repetition).
	Metadata map[string]string
}

// RunOutcome says how a run ended.
type RunOutcome struct {
	// RunID identifies the run on the target.
	RunID string
	// Interrupts are the questions the run waits on; empty when it
	// finished.
	Interrupts []Interrupt
	// Error is the run's error, empty when it did not fail.
	Error string
	// Nodes is the root graph's node path of this run, when the target
	// sees it as it runs (nil: the runner keeps what Thread reports).
	Nodes []string
	// Usage is what this run's model calls cost, when the target knows
	// (the runner sums it over the case's runs).
	Usage llm.Usage
}
