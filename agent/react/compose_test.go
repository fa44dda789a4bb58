package react_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// Tokens stream on the messages stream, tagged with the model node and the
// stored message's ID.
func TestStreamsTokens(t *testing.T) {
	m := llmtest.New(llmtest.WithChunkSize(3)).Reply(
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)),
		llmtest.Text("It is sunny in Oslo."),
	)
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})
	var (
		text     strings.Builder
		textIDs  = map[string]bool{}
		toolText strings.Builder
		final    graph.State
	)
	for ev, err := range g.Stream(context.Background(), react.Input("Oslo?"), graph.WithEvents(graph.EventMessages|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventValues:
			final = ev.State
		case graph.EventMessages:
			if ev.Node != react.ModelNode || ev.Namespace != "" {
				t.Errorf("message chunk from node %q namespace %q", ev.Node, ev.Namespace)
			}
			switch ev.Message.Part {
			case graph.PartText:
				text.WriteString(ev.Message.Text)
				textIDs[ev.Message.MessageID] = true
			case graph.PartToolCall:
				toolText.WriteString(ev.Message.Text)
			}
		}
	}
	if text.String() != "It is sunny in Oslo." || toolText.String() != `{"city":"Oslo"}` {
		t.Errorf("streamed text %q, tool-call text %q", text.String(), toolText.String())
	}
	msgs := react.Messages.Get(final)
	if last := msgs[len(msgs)-1]; len(textIDs) != 1 || !textIDs[last.ID] {
		t.Errorf("text chunks carry IDs %v; want only the stored answer's %s", textIDs, last.ID)
	}
	for _, req := range m.Requests() {
		if !req.Streamed {
			t.Errorf("request %d was not streamed", req.N)
		}
	}
}

func TestUsageIsSummed(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)).WithUsage(llm.Usage{InputTokens: 100, OutputTokens: 10, CachedInputTokens: 40}),
		llmtest.Text("Sunny.").WithUsage(llm.Usage{InputTokens: 130, OutputTokens: 5}),
	)
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{InputTokens: 230, CachedInputTokens: 40, OutputTokens: 15, Requests: 2}
	if res.Usage() != want {
		t.Errorf("usage = %+v; want %+v", res.Usage(), want)
	}
}

// The agent as a subgraph: it shares Messages with its parent, and its
// events carry the subgraph's namespace.
func TestAsSubgraph(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Namespace("helper:"), llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)), llmtest.Text("Sunny in Oslo."))
	var r ran
	agent := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})

	after := graph.NewKey[string]("after")
	b := graph.New(react.Messages, after)
	b.AddSubgraph("helper", agent)
	b.AddNode("report", func(_ context.Context, s graph.State) (graph.Output, error) {
		answer, _ := react.Answer(s)
		return graph.Writes(after.Set("got: " + answer)), nil
	})
	b.SetEntry("helper")
	b.AddEdge("helper", "report")
	b.AddEdge("report", graph.END)
	parent, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	var chunks, fromHelper int
	var final graph.State
	for ev, err := range parent.Stream(context.Background(), react.Input("Oslo?"), graph.WithEvents(graph.EventMessages|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventValues {
			final = ev.State
			continue
		}
		chunks++
		if ev.Node == react.ModelNode && strings.HasPrefix(ev.Namespace, "helper:") {
			fromHelper++
		}
	}
	if chunks == 0 || chunks != fromHelper {
		t.Errorf("%d message chunks, %d from the helper's model node", chunks, fromHelper)
	}
	if got := after.Get(final); got != "got: Sunny in Oslo." {
		t.Errorf("parent saw %q", got)
	}
	want := []string{"user:Oslo?", "assistant>weather", "tool(call_1):sunny in Oslo", "assistant:Sunny in Oslo."}
	if d := cmp.Diff(want, roles(react.Messages.Get(final))); d != "" {
		t.Errorf("parent history (-want +got):\n%s", d)
	}
}

// Two loops in one builder, each with its own keys, the second fed by the
// first's answer.
func TestAddToTwoLoops(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Node("research_model"), llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)), llmtest.Text("Oslo is sunny."))
	m.When(llmtest.Node("write_model"), llmtest.Text("A sunny day in Oslo!"))
	var r ran
	research := react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, System: "Research."}
	write := react.Config{Model: m, System: "Write.",
		Messages: llm.NewMessagesKey("draft"), Calls: tool.NewRecordsKey("draft_calls"), ToolSubset: graph.NewKey[[]string]("draft_tools")}

	b := graph.New(append(research.StateKeys(), write.StateKeys()...)...)
	entry, err := react.AddTo(b, "research_", "handoff", research)
	if err != nil {
		t.Fatal(err)
	}
	b.SetEntry(entry)
	b.AddNode("handoff", func(_ context.Context, s graph.State) (graph.Output, error) {
		found, _ := react.Answer(s)
		return graph.Writes(graph.Append(write.Messages, llm.User("Write a line about: "+found))), nil
	})
	next, err := react.AddTo(b, "write_", graph.END, write)
	if err != nil {
		t.Fatal(err)
	}
	b.AddEdge("handoff", next)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := react.AnswerFrom(write.Messages.Get(res.State)); got != "A sunny day in Oslo!" {
		t.Errorf("writer's answer = %q", got)
	}
	if d := cmp.Diff([]string{"system:Write.", "user:Write a line about: Oslo is sunny."}, roles(m.LastRequest().Messages)); d != "" {
		t.Errorf("the writer's request (-want +got):\n%s", d)
	}
	if n := len(react.Messages.Get(res.State)); n != 4 {
		t.Errorf("the research history has %d messages; want 4", n)
	}
}

func TestAddToErrors(t *testing.T) {
	_, err := react.AddTo(nil, "", "", react.Config{MaxSteps: 5})
	if err == nil {
		t.Fatal("AddTo accepted a nil builder")
	}
	for _, want := range []string{"nil builder", "empty next", "MaxSteps is set", "Model is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}
