package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Two assistants of the graph answer with their own greeting.
func TestAssistantsDiffer(t *testing.T) {
	for conf, want := range map[string]string{
		`{}`: "You said: hi",
		`{"configurable":{"greeting":"Bonjour"}}`: "Bonjour: hi",
	} {
		g, err := newEcho(context.Background(), runs.Assistant{ID: "a", Config: json.RawMessage(conf)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := g.Invoke(context.Background(), graph.Writes(graph.Append(Messages, llm.User("hi"))))
		if err != nil {
			t.Fatal(err)
		}
		h := Messages.Get(res.State)
		if got := h[len(h)-1].Text(); got != want {
			t.Errorf("config %s: reply %q, want %q", conf, got, want)
		}
	}
	if _, err := newEcho(context.Background(), runs.Assistant{ID: "a", Config: json.RawMessage(`{"configurable":{"greeting":5}}`)}); err == nil {
		t.Error("a greeting that is not a string was accepted")
	}
}

// The main serves and stops when its context ends.
func TestRunServesAndStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := run(ctx, "127.0.0.1:0", filepath.Join(t.TempDir(), "s.db"), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
}

// The steps graph runs n steps, one custom event and one "done" entry
// each; bad input and a bad step_ms fail with errors that say what fits.
func TestSteps(t *testing.T) {
	g, err := newSteps(context.Background(), runs.Assistant{ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var customs []any
	var final graph.State
	for ev, err := range g.Stream(ctx, graph.Writes(StepCount.Set(3)), graph.WithRunContext(map[string]int{"step_ms": 0}), graph.WithEvents(graph.EventCustom|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventCustom:
			customs = append(customs, ev.Custom)
		case graph.EventValues:
			final = ev.State
		}
	}
	if got := Done.Get(final); len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Errorf("done = %v, want [1 2 3]", got)
	}
	if len(customs) != 3 {
		t.Errorf("%d custom events, want 3: %v", len(customs), customs)
	}
	for in, want := range map[int]string{0: "between 1 and 50", 51: "between 1 and 50"} {
		if _, err := g.Invoke(ctx, graph.Writes(StepCount.Set(in))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("steps %d: err %v, want one saying %q", in, err, want)
		}
	}
	if _, err := g.Invoke(ctx, graph.Writes(StepCount.Set(1)), graph.WithRunContext(map[string]int{"step_ms": 999999})); err == nil || !strings.Contains(err.Error(), "step_ms") {
		t.Errorf("step_ms 999999: err %v, want one naming step_ms", err)
	}
	// A cancelled run stops waiting.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.Invoke(cctx, graph.Writes(StepCount.Set(1)), graph.WithRunContext(map[string]int{"step_ms": 5000})); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: err %v, want context.Canceled", err)
	}
}
