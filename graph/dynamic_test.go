package graph_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

type note struct {
	NoteID string `json:"id"`
	Text   string `json:"text"`
}

func (n note) ID() string { return n.NoteID }

// Generic code sees a graph's state as JSON, decodes JSON input into writes
// through the reducers, and reads updates as JSON.
func TestDynamicJSONView(t *testing.T) {
	title := graph.NewKey[string]("title")
	notes := graph.NewKey("notes", graph.MergeByID[note]())
	count := graph.NewKey("count", graph.Sum[int]())
	b := graph.New(title, notes, count)
	b.AddNode("n", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(notes, note{"b", "second"}), graph.Append(notes, note{"c", "third"}), graph.Remove(notes, "a"), count.Set(2)), nil
	})
	b.SetEntry("n")
	b.AddEdge("n", graph.END)
	g := mustCompile(t, b)

	keys := g.Keys()
	if len(keys) != 3 || keys[1].Name != "notes" || keys[1].Type != reflect.TypeFor[[]note]() || keys[2].Reducer == "" {
		t.Errorf("keys %+v", keys)
	}
	in, err := g.DecodeInput([]byte(`{"title":"T","notes":[{"id":"a","text":"first"}],"count":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var updates []string
	var final graph.State
	for ev, err := range g.Stream(context.Background(), in, graph.WithEvents(graph.EventUpdates|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventUpdates {
			j, err := ev.Update.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			updates = append(updates, string(j))
		} else {
			final = ev.State
		}
	}
	want := `{"notes":[{"id":"b","text":"second"},{"id":"c","text":"third"}],"notes:remove":["a"],"count":2}`
	if len(updates) != 1 || updates[0] != want {
		t.Errorf("updates %v, want %s", updates, want)
	}
	j, err := final.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(`{"title":"T","notes":[{"id":"b","text":"second"},{"id":"c","text":"third"}],"count":3}`, string(j)); d != "" {
		t.Errorf("state JSON (-want +got):\n%s", d)
	}
	if v, ok, err := final.ValueJSON("count"); err != nil || !ok || string(v) != "3" {
		t.Errorf("count = %s %v %v", v, ok, err)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"titel":"x"}`, `"titel"`},
		{`{"count":"two"}`, `input key "count"`},
		{`[1]`, "must be a JSON object"},
	} {
		if _, err := g.DecodeInput([]byte(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("DecodeInput(%s): err = %v, want it to name %s", bad.in, err, bad.want)
		}
	}
	if u, err := g.DecodeInput([]byte(" null ")); err != nil || u != nil {
		t.Errorf("null input: %v %v", u, err)
	}
}
