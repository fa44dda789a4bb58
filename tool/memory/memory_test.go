package memory_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/embedtest"
	"github.com/trellis-agents/trellis/tool"
	"github.com/trellis-agents/trellis/tool/memory"
)

// call runs one tool inside a graph node, with the store and run context
// given, and returns its result text.
func call(t *testing.T, st store.Store, user string, name, args string) (string, error) {
	t.Helper()
	tools := memory.Tools(memory.Config{Limit: 2})
	var tl tool.Tool
	for _, x := range tools {
		if x.Info().Name == name {
			tl = x
		}
	}
	out := graph.NewKey[string]("out")
	b := graph.New(out)
	var callErr error
	b.AddNode("n", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		r, err := tl.Call(ctx, json.RawMessage(args))
		callErr = err
		return graph.Writes(out.Set(r)), nil
	})
	b.SetEntry("n")
	b.AddEdge("n", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithStore(st)}
	if user != "" {
		opts = append(opts, graph.WithRunContext(map[string]any{"user_id": user}))
	}
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return out.Get(res.State), callErr
}

func TestMemoriesArePerUser(t *testing.T) {
	// Many dimensions, so the hashed words of this test do not collide.
	st := store.NewMemory(store.MemoryIndex(store.IndexConfig{Embedder: embedtest.New(4096), Fields: []string{"text"}}))
	for _, m := range []string{"likes green tea", "works in Lisbon", "has a dog called Rex"} {
		if _, err := call(t, st, "ann", "remember", `{"memory":"`+m+`"}`); err != nil {
			t.Fatal(err)
		}
	}
	got, err := call(t, st, "ann", "recall", `{"query":"green tea?"}`)
	if err != nil {
		t.Fatal(err)
	}
	var found []memory.Memory
	if err := json.Unmarshal([]byte(got), &found); err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || found[0].Memory != "likes green tea" || found[0].Score == nil {
		t.Errorf("recall = %s; want 2 memories (the limit), the tea first with a score", got)
	}
	// Correcting a memory by its id replaces it.
	if _, err := call(t, st, "ann", "remember", `{"memory":"likes black tea","id":"`+found[0].ID+`"}`); err != nil {
		t.Fatal(err)
	}
	got, _ = call(t, st, "ann", "recall", `{"query":"tea"}`)
	if strings.Contains(got, "green") || !strings.Contains(got, "black tea") {
		t.Errorf("after the correction recall = %s", got)
	}
	if got, _ := call(t, st, "bob", "recall", `{"query":"tea"}`); got != "[]" {
		t.Errorf("another user's recall = %s; want nothing", got)
	}
}

func TestRecallWithoutIndex(t *testing.T) {
	st := store.NewMemory()
	for _, m := range []string{"likes green tea", "works in Lisbon"} {
		if _, err := call(t, st, "ann", "remember", `{"memory":"`+m+`"}`); err != nil {
			t.Fatal(err)
		}
	}
	got, err := call(t, st, "ann", "recall", `{"query":"Where does she work? Lisbon?"}`)
	if err != nil || !strings.Contains(got, "Lisbon") || strings.Contains(got, "tea") {
		t.Errorf("recall without an index = %s, %v; want the memory sharing a word", got, err)
	}
}

func TestMemoryErrors(t *testing.T) {
	st := store.NewMemory()
	if _, err := call(t, st, "", "remember", `{"memory":"x"}`); err == nil || !strings.Contains(err.Error(), "user_id") {
		t.Errorf("no user: %v", err)
	}
	if _, err := call(t, st, "ann", "remember", `{"memory":"  "}`); !tool.IsArgumentError(err) {
		t.Errorf("empty memory: %v; want an argument error", err)
	}
	if _, err := call(t, st, "ann", "recall", `{"query":""}`); !tool.IsArgumentError(err) {
		t.Errorf("empty query: %v; want an argument error", err)
	}
	long := strings.Repeat("a", memory.MaxMemoryRunes+1)
	if _, err := call(t, st, "ann", "remember", `{"memory":"`+long+`"}`); !tool.IsArgumentError(err) {
		t.Errorf("long memory: %v; want an argument error", err)
	}
}
