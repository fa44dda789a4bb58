// Package examples describes the runnable example systems (one per
// subpackage) in a form the CLI and the example mains share: each builds its
// graph from an llm.Model, so its end-to-end tests run on the scripted model
// and never link a vendor SDK.
package examples

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples/console"
	"github.com/trellis-agents/trellis/llm"
)

// Example is one runnable example system.
type Example struct {
	// Name is how the CLI names it ("scheduler").
	Name string
	// Summary says in one line what it shows.
	Summary string
	// Script returns a scripted model that plays the example's scenario,
	// used when no real model is configured.
	Script func() llm.Model
	// Open builds the example over env: its graph, input and the ways to
	// show it. Close the result when done.
	Open func(ctx context.Context, env Env) (*Instance, error)
}

// Env is what an example is built from.
type Env struct {
	// Model answers every request (the scripted one, or a real provider's).
	Model llm.Model
	// DBPath is the SQLite file the CLI keeps threads and memory in; an
	// example may keep its own tables there too (each component migrates
	// its own schema).
	DBPath string
	// DataDir is a directory for any other files the example needs.
	DataDir string
	// Thread is the ID of the thread the example will run on.
	Thread string
	// Fresh says the thread starts over: an example with data of its own
	// resets it to its starting point.
	Fresh bool
}

// Instance is an opened example, ready to run in a console.Session.
type Instance struct {
	Graph *graph.Graph
	// Input starts a new thread.
	Input graph.Update
	// Options are added to every run (a store, a step limit...); the CLI
	// adds the checkpointer and thread.
	Options []graph.RunOption
	// Handlers answer the example's interrupts at the terminal.
	Handlers []console.Handler
	// Events and Print show the run as it goes.
	Events graph.EventKind
	Print  func(w io.Writer, ev graph.Event)
	// Outcome renders the final state for the person.
	Outcome func(s graph.State) string
	// Close releases what Open acquired (nil: nothing to release).
	Close func() error
}
