package runs

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// Messages arrive in LangChain's JSON (either form, removals included),
// reach the graph as llm.Messages, and go out in LangChain's shape in
// values and updates.
func TestLangChainMessagesInAndOut(t *testing.T) {
	msgs := llm.NewMessagesKey("messages")
	topic := graph.NewKey[string]("topic")
	b := graph.New(msgs, topic)
	b.AddNode("bot", func(_ context.Context, s graph.State) (graph.Output, error) {
		last := msgs.Get(s)[len(msgs.Get(s))-1]
		reply := llm.Message{ID: "m-reply", Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text("echo: " + last.Text())}}
		return graph.Writes(graph.Append(msgs, reply)), nil
	})
	b.SetEntry("bot")
	b.AddEdge("bot", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	conv := LCConverter()
	u, err := conv(g, json.RawMessage(`{"topic":"x","messages":[{"role":"user","content":"hi","id":"m1"},{"type":"human","content":"again","id":"m2"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var values, update json.RawMessage
	w := LCWire{}
	for ev, err := range g.Stream(context.Background(), u, graph.WithEvents(graph.EventValues|graph.EventUpdates)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventValues {
			values, _ = w.State(ev.State)
		} else {
			update, _ = w.Update(ev.Update)
		}
	}
	for _, want := range []string{`"type":"human"`, `"content":"hi"`, `"id":"m1"`, `"type":"ai"`, `"content":"echo: again"`, `"topic":"x"`} {
		if !strings.Contains(string(values), want) {
			t.Errorf("values %s lack %s", values, want)
		}
	}
	if !strings.HasPrefix(string(values), `{"messages":`) {
		t.Errorf("values %s: keys out of schema order", values)
	}
	if !strings.Contains(string(update), `"type":"ai"`) || strings.Contains(string(update), `"role"`) {
		t.Errorf("update %s: want LangChain's shape", update)
	}
	// A removal goes through the reducer.
	u2, err := conv(g, json.RawMessage(`{"messages":[{"type":"remove","id":"m1"}]}`))
	if err != nil || len(u2) != 1 || u2[0].Op() != "remove" {
		t.Fatalf("removal: %v %v", u2, err)
	}
	// A bad message names its field.
	_, err = conv(g, json.RawMessage(`{"messages":[{"role":"user","content":"ok"},{"role":"robot","content":"x"}]}`))
	var fe interface{ FieldPointer() string }
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.FieldPointer(), "/messages/1") {
		t.Errorf("bad message: %v", err)
	}
	// Through PlanRun, the pointer is the request's.
	_, err = PlanRun(g, Kwargs{Input: json.RawMessage(`{"messages":[{"role":"robot"}]}`)}, nil, nil, conv)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.HasPrefix(ie.Pointer, "/input/messages/0") {
		t.Errorf("PlanRun: %v", err)
	}
}
