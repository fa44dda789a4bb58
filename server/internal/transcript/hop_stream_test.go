package transcript

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// A LangGraph-API hop that streamed folds into its one entry: the remote
// nodes and custom events as updates, the message chunks as its answer
// (chunks that repeat a word are kept), and none of them as loose events.
func TestBuildFoldsAStreamedLangGraphHop(t *testing.T) {
	e := func(v remotegraph.Event) string {
		v.Agent, v.ThreadID, v.RunID = "lg", "th-1", "run-1"
		return ev(t, v)
	}
	f := &fakeStore{}
	f.add("r1", `{"input":{}}`,
		"custom", e(remotegraph.Event{Kind: remotegraph.KindRun, Status: "created"}),
		"custom", e(remotegraph.Event{Kind: remotegraph.KindCustom, Data: json.RawMessage(`{"progress":"looking"}`)}),
		"custom", e(remotegraph.Event{Kind: remotegraph.KindNode, Node: "note"}),
		"custom", e(remotegraph.Event{Kind: remotegraph.KindMessage, MessageID: "m1", Text: "no, "}),
		"custom", e(remotegraph.Event{Kind: remotegraph.KindMessage, MessageID: "m1", Text: "no, ", Append: true}),
		"custom", e(remotegraph.Event{Kind: remotegraph.KindMessage, MessageID: "m1", Text: "yes.", Append: true}),
		"custom", e(remotegraph.Event{Kind: remotegraph.KindNode, Node: "bot"}),
		"custom", e(remotegraph.Event{Kind: remotegraph.KindRun, Status: "success"}))
	turns, err := Build(context.Background(), f, nil, "x", db.Thread{ID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var hops []Hop
	for _, turn := range turns {
		switch turn.Kind {
		case KindHop:
			hops = append(hops, hopOf(t, turn))
		case KindEvent:
			t.Errorf("a loose event %s", turn.Data)
		}
	}
	if len(hops) != 1 {
		t.Fatalf("%d hops, want 1:\n%s", len(hops), summary(turns))
	}
	h := hops[0]
	var ups []string
	for _, u := range h.Updates {
		ups = append(ups, u.State+":"+u.Text)
	}
	want := `created: working:{"progress":"looking"} working:node note finished working:node bot finished success:`
	if got := strings.Join(ups, " "); got != want || h.Outcome != "no, no, yes." || h.State != "success" {
		t.Errorf("hop updates %q outcome %q state %q; want %q, the whole message, success", got, h.Outcome, h.State, want)
	}
}
