package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
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
