package llm_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// callModel is a minimal model for Call's tests: it streams chunks, or
// returns them assembled from Generate, and remembers the last request.
type callModel struct {
	chunks   []llm.Chunk
	err      error
	last     *llm.Request
	streamed bool
}

func (m *callModel) Name() string { return "test:call" }

func (m *callModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.last = req
	if m.err != nil {
		return nil, m.err
	}
	a := llm.Assembler{ID: "msg_generated"}
	for _, c := range m.chunks {
		a.Add(c)
	}
	return a.Response(), nil
}

func (m *callModel) Stream(_ context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	m.last = req
	m.streamed = true
	return func(yield func(llm.Chunk, error) bool) {
		for _, c := range m.chunks {
			if !yield(c, nil) {
				return
			}
		}
		if m.err != nil {
			yield(llm.Chunk{}, m.err)
		}
	}
}

var history = llm.NewMessagesKey("history")

func modelNode(m llm.Model) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Output, error) {
		resp, err := llm.Call(ctx, m, &llm.Request{Messages: history.Get(s)})
		if err != nil {
			return nil, err
		}
		return graph.Writes(history.Set([]llm.Message{resp.Message})), nil
	}
}

func oneNodeGraph(t *testing.T, m llm.Model) *graph.Graph {
	t.Helper()
	b := graph.New(history)
	b.AddNode("chat", modelNode(m))
	b.SetEntry("chat")
	b.AddEdge("chat", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCallStreamsTokensOntoTheGraph(t *testing.T) {
	m := &callModel{chunks: []llm.Chunk{
		{Reasoning: "Let me "},
		{Reasoning: "check."},
		{Text: "It is "},
		{Text: "sunny."},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_1", Name: "log"}}},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, Arguments: `{"n":1}`}}},
		{Usage: &llm.Usage{InputTokens: 30, OutputTokens: 9}},
	}}
	g := oneNodeGraph(t, m)
	type tok struct {
		Part graph.MessagePart
		Text string
		Node string
	}
	var toks []tok
	var ids = map[string]bool{}
	var final graph.State
	for ev, err := range g.Stream(context.Background(), graph.Writes(history.Set([]llm.Message{llm.User("weather?")})),
		graph.WithEvents(graph.EventMessages|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventMessages:
			toks = append(toks, tok{ev.Message.Part, ev.Message.Text, ev.Node})
			ids[ev.Message.MessageID] = true
		case graph.EventValues:
			final = ev.State
		}
	}
	if !m.streamed {
		t.Fatal("the model was not streamed although the run streams messages")
	}
	want := []tok{
		{graph.PartReasoning, "Let me ", "chat"}, {graph.PartReasoning, "check.", "chat"},
		{graph.PartText, "It is ", "chat"}, {graph.PartText, "sunny.", "chat"},
		{graph.PartToolCall, "", "chat"}, {graph.PartToolCall, `{"n":1}`, "chat"},
	}
	if d := cmp.Diff(want, toks); d != "" {
		t.Errorf("message events (-want +got):\n%s", d)
	}
	msgs := history.Get(final)
	if len(msgs) != 2 {
		t.Fatalf("history has %d messages, want 2", len(msgs))
	}
	reply := msgs[1]
	if len(ids) != 1 || !ids[reply.ID] {
		t.Errorf("stream message IDs %v, want only the stored reply's ID %q", ids, reply.ID)
	}
	if reply.Text() != "It is sunny." || reply.Reasoning != "Let me check." || len(reply.ToolCalls) != 1 {
		t.Errorf("stored reply = %+v", reply)
	}
}

func TestCallRecordsUsageAndGeneratesWhenNotStreaming(t *testing.T) {
	m := &callModel{chunks: []llm.Chunk{{Text: "ok"}, {Usage: &llm.Usage{InputTokens: 11, OutputTokens: 2}}}}
	res, err := oneNodeGraph(t, m).Invoke(context.Background(), graph.Writes(history.Set([]llm.Message{llm.User("hi")})))
	if err != nil {
		t.Fatal(err)
	}
	if m.streamed {
		t.Error("Call streamed although nobody listens to messages")
	}
	want := llm.Usage{InputTokens: 11, OutputTokens: 2, Requests: 1}
	if res.Usage() != want || res.NodeUsage["chat"] != want {
		t.Errorf("usage: run %+v, node %+v; want %+v", res.Usage(), res.NodeUsage["chat"], want)
	}
}

func TestCallRepairsHistoryWithoutTouchingTheCaller(t *testing.T) {
	m := &callModel{chunks: []llm.Chunk{{Text: "done"}}}
	call := llm.ToolCall{ID: "call_1", Name: "delete_row", Arguments: `{"id":3}`}
	req := &llm.Request{Messages: []llm.Message{llm.User("clean up"), llm.Assistant("", call), llm.User("never mind")}}
	before := len(req.Messages)
	if _, err := llm.Call(context.Background(), m, req); err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != before {
		t.Errorf("the caller's request was changed")
	}
	sent := m.last.Messages
	if len(sent) != 4 || sent[2].Role != llm.RoleTool || sent[2].ToolCallID != "call_1" || !sent[2].IsError {
		t.Fatalf("sent history not repaired: %+v", sent)
	}
	if !strings.Contains(sent[2].Text(), "not run") {
		t.Errorf("repair message %q does not say the call did not run", sent[2].Text())
	}
}

func TestCallNamesTheModelInErrors(t *testing.T) {
	m := &callModel{err: errors.New("boom")}
	_, err := llm.Call(context.Background(), m, &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if err == nil || !strings.Contains(err.Error(), "test:call") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want it to name the model and the cause", err)
	}
	api := &llm.APIError{Provider: "openai", Model: "gpt-x", StatusCode: 429}
	m.err = api
	_, err = llm.Call(context.Background(), m, &llm.Request{})
	if !errors.Is(err, api) || strings.Count(err.Error(), "gpt-x") != 1 {
		t.Fatalf("err = %v, want the APIError unwrapped once", err)
	}
}
