package remotegraph

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// The stream reader dispatches events on blank lines (ids carried over,
// data lines joined, comments skipped, a partial event at the end
// dropped), and refuses a line over its bound with an error that says so.
func TestReadSSE(t *testing.T) {
	in := ": keep-alive\n\nevent: updates\nid: 3\ndata: {\"a\":\ndata: 1}\n\nevent: custom\ndata: 2\n\nevent: values\ndata: partial"
	var got []string
	err := readSSE(strings.NewReader(in), func(e sseEvent) error {
		got = append(got, e.id+" "+e.name+" "+string(e.data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "3 updates {\"a\":\n1}|3 custom 2"; strings.Join(got, "|") != want {
		t.Errorf("events %q; want %q", strings.Join(got, "|"), want)
	}
	long := "data: " + strings.Repeat("x", maxStreamLine+1) + "\n\n"
	err = readSSE(strings.NewReader(long), func(sseEvent) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a line over the bound: %v", err)
	}
}

// A message's text: a string, or the text of its text parts.
func TestContentText(t *testing.T) {
	if got := contentText([]byte(`"hi"`)); got != "hi" {
		t.Errorf("string content: %q", got)
	}
	if got := contentText([]byte(`[{"type":"text","text":"a"},{"type":"image_url"},{"text":"b"}]`)); got != "ab" {
		t.Errorf("parts: %q", got)
	}
	if got := contentText([]byte(`{"nope":1}`)); got != "" {
		t.Errorf("not content: %q", got)
	}
}

// A remote message chunk is passed on twice: as the hop's custom event,
// and as the local node's message chunk in the remote agent's voice.
func TestMessageChunkInTheAgentsVoice(t *testing.T) {
	p := passer{a: &Agent{cfg: Config{Name: "greeter"}}, thread: "rt", run: "rr"}
	b := graph.New()
	b.AddNode("call", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		return nil, p.event(ctx, sseEvent{name: "messages", data: []byte(`[{"id":"m1","type":"AIMessageChunk","content":"Hello"},{}]`)})
	})
	b.SetEntry("call")
	b.AddEdge("call", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev, err := range g.Stream(context.Background(), nil, graph.WithEvents(graph.EventMessages|graph.EventCustom)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventMessages:
			c := ev.Message
			got = append(got, "chunk "+ev.Node+" "+c.MessageID+" "+c.Text+" "+c.Meta[llm.MetaVoice]+" "+c.Meta[MetaThread])
		case graph.EventCustom:
			if e, ok := ev.Custom.(Event); ok {
				got = append(got, e.Kind+" "+e.Text)
			}
		}
	}
	if want := "remote_message Hello|chunk call m1 Hello greeter rt"; strings.Join(got, "|") != want {
		t.Errorf("events %q, want %q", strings.Join(got, "|"), want)
	}
}
