package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// A LangGraph-API hop streams: the remote graph's custom event, its
// model's answer in chunks and its finished nodes arrive as the local
// run's custom events while the remote run works, between the run's
// "created" and "success", and the chunks make up the remote's answer.
func TestRemoteLangGraphStreamsAcrossTheHop(t *testing.T) {
	const answer = "The remote side streams this answer in several small chunks."
	remoteModel := llmtest.New()
	remoteModel.Otherwise(llmtest.Text(answer))
	msgs := llm.NewMessagesKey("messages")
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Register("talker", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(msgs)
		b.AddNode("note", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			graph.Emit(ctx, map[string]any{"progress": "looking things up"})
			return nil, nil
		})
		b.AddNode("bot", func(ctx context.Context, st graph.State) (graph.Output, error) {
			resp, err := llm.Call(ctx, remoteModel, &llm.Request{Messages: msgs.Get(st)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(msgs, resp.Message)), nil
		})
		b.SetEntry("note")
		b.AddEdge("note", "bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	remote := serveInBackground(t, rs)
	a, err := remotegraph.New(remotegraph.Config{Name: "talker", URL: remote.url, Assistant: "talker", AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	reply := graph.NewKey[string]("reply")
	b := graph.New(reply)
	b.AddNode("hop", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		text, err := a.Ask(ctx, "Tell me something.")
		if err != nil {
			return nil, err
		}
		return graph.Writes(reply.Set(text)), nil
	})
	b.SetEntry("hop")
	b.AddEdge("hop", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var chunks []remotegraph.Event
	var custom json.RawMessage
	for ev, err := range g.Stream(t.Context(), graph.Writes(reply.Set("")), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("local"), graph.WithEvents(graph.EventCustom)) {
		if err != nil {
			t.Fatal(err)
		}
		e, ok := ev.Custom.(remotegraph.Event)
		if !ok {
			continue
		}
		k := e.Kind
		switch e.Kind {
		case remotegraph.KindRun:
			k += ":" + e.Status
		case remotegraph.KindNode:
			k += ":" + e.Node
		case remotegraph.KindMessage:
			chunks = append(chunks, e)
			if len(chunks) > 1 {
				continue
			}
		case remotegraph.KindCustom:
			custom = e.Data
		}
		kinds = append(kinds, k)
	}
	want := "remote_run:created remote_custom remote_node:note remote_message remote_node:bot remote_run:success"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("the hop's events %q; want %q", got, want)
	}
	if !strings.Contains(string(custom), `"progress":"looking things up"`) {
		t.Errorf("the remote's custom event arrived as %s", custom)
	}
	var text strings.Builder
	for i, c := range chunks {
		if c.Append != (i > 0) {
			t.Errorf("chunk %d: append %v", i, c.Append)
		}
		text.WriteString(c.Text)
	}
	if len(chunks) < 2 || text.String() != answer {
		t.Errorf("%d message chunks making %q; want the answer in several chunks", len(chunks), text.String())
	}
}
