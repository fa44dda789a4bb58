package catalog

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/store"
)

// TestEveryAppBuildsFromAnEnv: each entry builds from an Env alone (as a
// service would), names itself as listed, and closes cleanly.
func TestEveryAppBuildsFromAnEnv(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range All() {
		if seen[e.Name] || e.Summary == "" || e.Script == nil || e.Open == nil {
			t.Errorf("entry %q is incomplete or repeated", e.Name)
		}
		seen[e.Name] = true
		dir := t.TempDir()
		app, err := e.Open(context.Background(), apps.Env{Model: e.Script(), Database: filepath.Join(dir, "t.db"), DataDir: dir, Scope: "t"})
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if app.Name != e.Name || app.Graph == nil || app.Input == nil || app.Outcome == nil || app.Close == nil {
			t.Errorf("%s: the App lacks a part: %+v", e.Name, app)
		}
		if err := app.Close(); err != nil {
			t.Errorf("%s: Close: %v", e.Name, err)
		}
		if err := app.Close(); err != nil {
			t.Errorf("%s: a second Close: %v", e.Name, err)
		}
	}
	if _, err := Lookup(Demo); err != nil {
		t.Error(err)
	}
	if _, err := Lookup("nosuch"); err == nil || !strings.Contains(err.Error(), "the apps are builder, deep, planner, scheduler, sqlrouter, testplanner") {
		t.Errorf("Lookup(nosuch) = %v", err)
	}
}

// Every app says how a person starts with it: a chat app offers example
// requests, an app whose input is not a chat names its input keys; the
// declaration reaches assistant metadata as "examples" and "input".
func TestEveryAppDeclaresHowToStart(t *testing.T) {
	for _, e := range All() {
		st := e.Start
		if len(st.Examples) == 0 && len(st.Input) == 0 {
			t.Errorf("%s declares neither example requests nor input keys", e.Name)
		}
		for _, ex := range st.Examples {
			if strings.TrimSpace(ex) == "" || strings.Contains(ex, "\n") {
				t.Errorf("%s: example %q is not one line of text", e.Name, ex)
			}
		}
		for _, k := range st.Input {
			if k.Key == "" || k.Description == "" {
				t.Errorf("%s: input key %+v needs a name and a description", e.Name, k)
			}
		}
		m := st.Metadata()
		if ex, _ := m["examples"].([]string); len(ex) != len(st.Examples) {
			t.Errorf("%s: metadata examples %v, declared %v", e.Name, m["examples"], st.Examples)
		}
		if in, _ := m["input"].([]any); len(in) != len(st.Input) {
			t.Errorf("%s: metadata input %v, declared %v", e.Name, m["input"], st.Input)
		}
	}
}

// TestEveryAppRunsThroughTheEnvMiddleware: the chain a runner gives
// (Env.Middleware, from assistants[].middleware) wraps the model calls of
// every app's agents.
func TestEveryAppRunsThroughTheEnvMiddleware(t *testing.T) {
	for _, e := range All() {
		t.Run(e.Name, func(t *testing.T) {
			var calls atomic.Int64
			spy := middleware.ModelFunc("spy", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
				calls.Add(1)
				return next(ctx, c)
			})
			dir := t.TempDir()
			app, err := e.Open(context.Background(), apps.Env{Model: e.Script(), Database: filepath.Join(dir, "t.db"), DataDir: dir, Scope: "t",
				Middleware: []middleware.Middleware{spy}})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			opts := append(slices.Clone(app.Options), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"), graph.WithStore(store.NewMemory()))
			// The run may end or wait for a person; either way the model
			// was asked first.
			if _, err := app.Graph.Invoke(apps.WithScope(context.Background(), "t"), app.Input(""), opts...); err != nil && !errors.Is(err, graph.ErrInterrupted) {
				t.Fatal(err)
			}
			if calls.Load() == 0 {
				t.Error("no model call went through the Env's middleware")
			}
		})
	}
}
