package lcmsg_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// streamEvents is a model reply as llm.Call streams it from a task in a
// subgraph: reasoning, text, then one tool call in two pieces.
func streamEvents() []graph.Event {
	ev := func(c graph.MessageChunk) graph.Event {
		return graph.Event{Kind: graph.EventMessages, Step: 2, Node: "agent", TaskID: "task-7", Namespace: "planner:task-1", Message: c}
	}
	return []graph.Event{
		ev(graph.MessageChunk{MessageID: "msg_1", Part: graph.PartReasoning, Text: "Check the "}),
		ev(graph.MessageChunk{MessageID: "msg_1", Part: graph.PartReasoning, Text: "weather."}),
		ev(graph.MessageChunk{MessageID: "msg_1", Part: graph.PartText, Text: "Let me look"}),
		ev(graph.MessageChunk{MessageID: "msg_1", Part: graph.PartToolCall, Text: `{"city":`,
			Meta: map[string]string{"index": "0", "call_id": "call_a", "name": "get_weather"}}),
		ev(graph.MessageChunk{MessageID: "msg_1", Part: graph.PartToolCall, Text: `"Lisbon"}`,
			Meta: map[string]string{"index": "0"}}),
	}
}

// The messages-tuple events of a streamed reply are pinned by a golden
// file: AIMessageChunk JSON with the id of the message the chunks become,
// and the metadata the SDK reads (tags, langgraph_node, langgraph_step,
// langgraph_checkpoint_ns).
func TestTupleGolden(t *testing.T) {
	run := lcmsg.RunInfo{ThreadID: "th-1", RunID: "run-1", GraphID: "trip", AssistantID: "as-1",
		Extra: map[string]any{"user": "ana", "thread_id": "overridden"}}
	var out bytes.Buffer
	for _, e := range streamEvents() {
		b, err := lcmsg.Tuple(e, run)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	golden(t, "tuple_stream.jsonl", out.Bytes())

	// Spot checks that do not depend on the golden file.
	var pair [2]map[string]any
	if err := json.Unmarshal(bytes.SplitN(out.Bytes(), []byte("\n"), 2)[0], &pair); err != nil {
		t.Fatal(err)
	}
	chunk, md := pair[0], pair[1]
	if chunk["type"] != "AIMessageChunk" || chunk["id"] != "msg_1" || chunk["content"] != "" {
		t.Errorf("reasoning chunk = %v", chunk)
	}
	if kw := chunk["additional_kwargs"].(map[string]any); kw["reasoning_content"] != "Check the " {
		t.Errorf("reasoning not in additional_kwargs.reasoning_content: %v", kw)
	}
	if md["langgraph_checkpoint_ns"] != "planner:task-1|agent:task-7" || md["langgraph_node"] != "agent" ||
		md["langgraph_step"] != 2.0 || md["thread_id"] != "th-1" || md["user"] != "ana" {
		t.Errorf("metadata = %v", md)
	}
	if tags, ok := md["tags"].([]any); !ok || len(tags) != 0 {
		t.Errorf("tags = %#v, want [] (the SDK's MessageTupleMetadata requires it)", md["tags"])
	}
}

// Concatenating the chunks as LangChain's AIMessageChunk.concat does
// (content and string kwargs appended, tool_call_chunks merged by index)
// gives the message that values later carries under the same id.
func TestChunksConcatToTheFinalMessage(t *testing.T) {
	var content, reasoning string
	calls := map[int]*lcmsg.ToolCallChunk{}
	for _, e := range streamEvents() {
		m, err := lcmsg.FromChunk(e.Message)
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != "msg_1" {
			t.Fatalf("chunk id %q", m.ID)
		}
		content += m.Content.Text
		if r, ok := m.AdditionalKwargs["reasoning_content"].(string); ok {
			reasoning += r
		}
		for _, tc := range m.ToolCallChunks {
			if tc.Index == nil {
				t.Fatal("tool-call chunk without index")
			}
			prev := calls[*tc.Index]
			if prev == nil {
				c := tc
				calls[*tc.Index] = &c
				continue
			}
			prev.Args += tc.Args
			if prev.ID == nil {
				prev.ID = tc.ID
			}
		}
	}
	final := lcmsg.FromLLM(llm.Message{ID: "msg_1", Role: llm.RoleAssistant, Reasoning: "Check the weather.",
		Parts: []llm.Part{llm.Text("Let me look")}, ToolCalls: []llm.ToolCall{{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Lisbon"}`}}})
	if content != final.Content.Text || reasoning != final.AdditionalKwargs["reasoning_content"] {
		t.Errorf("concatenated content %q reasoning %q; final %q %q", content, reasoning, final.Content.Text, final.AdditionalKwargs["reasoning_content"])
	}
	c := calls[0]
	if len(calls) != 1 || *c.ID != final.ToolCalls[0].ID || *c.Name != final.ToolCalls[0].Name || c.Args != string(final.ToolCalls[0].Args) {
		t.Errorf("merged tool call %+v, final %+v", c, final.ToolCalls[0])
	}
}

func TestChunkErrors(t *testing.T) {
	_, err := lcmsg.FromChunk(graph.MessageChunk{MessageID: "m", Part: graph.PartToolCall, Meta: map[string]string{"index": "first"}})
	if err == nil || !strings.Contains(err.Error(), `index "first"`) {
		t.Errorf("bad index: %v", err)
	}
	if _, err := lcmsg.FromChunk(graph.MessageChunk{MessageID: "m", Part: graph.MessagePart(9)}); err == nil {
		t.Error("unknown part accepted")
	}
	if _, err := lcmsg.Tuple(graph.Event{Kind: graph.EventValues}, lcmsg.RunInfo{}); err == nil || !strings.Contains(err.Error(), "messages event") {
		t.Errorf("Tuple of a values event: %v", err)
	}
}

// The canonical JSON has the fields LangChain writes for each type, and a
// removal is {"type": "remove", "id"} with an empty content.
func TestCanonicalFieldsPerType(t *testing.T) {
	keys := func(m lcmsg.Message) map[string]json.RawMessage {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	ai := keys(lcmsg.FromLLM(llm.Assistant("hi")))
	for k, want := range map[string]string{"type": `"ai"`, "tool_calls": `[]`, "invalid_tool_calls": `[]`, "usage_metadata": `null`,
		"additional_kwargs": `{}`, "response_metadata": `{}`, "name": `null`, "content": `"hi"`, "example": "false"} {
		if string(ai[k]) != want {
			t.Errorf("ai %s = %s, want %s", k, ai[k], want)
		}
	}
	tool := keys(lcmsg.FromLLM(llm.ToolError(llm.ToolCall{ID: "c", Name: "f"}, "boom")))
	if string(tool["status"]) != `"error"` || string(tool["tool_call_id"]) != `"c"` || string(tool["name"]) != `"f"` {
		t.Errorf("tool message = %v", tool)
	}
	rm := keys(lcmsg.Remove("m9"))
	if string(rm["type"]) != `"remove"` || string(rm["id"]) != `"m9"` || string(rm["content"]) != `""` {
		t.Errorf("removal = %v", rm)
	}
	if _, ok := rm["tool_calls"]; ok {
		t.Error("a removal carries tool_calls")
	}
	if b, _ := json.Marshal(lcmsg.FromLLMAll(nil)); string(b) != "[]" {
		t.Errorf("no messages = %s, want []", b)
	}
}

func TestValue(t *testing.T) {
	u := llm.User("hi")
	state := map[string]any{"messages": []llm.Message{u}, "last": &u, "none": []llm.Message(nil), "n": 3}
	out := map[string]any{}
	for k, v := range state {
		out[k] = lcmsg.Value(v)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(b, &got)
	ms, ok := got["messages"].([]any)
	if !ok || len(ms) != 1 || ms[0].(map[string]any)["type"] != "human" || got["last"].(map[string]any)["content"] != "hi" {
		t.Errorf("values = %s", b)
	}
	if none, ok := got["none"].([]any); !ok || len(none) != 0 {
		t.Errorf("an empty history = %v, want []", got["none"])
	}
	if got["n"] != 3.0 {
		t.Errorf("a non-message value changed: %v", got["n"])
	}
}

// A chunk streamed under a voice (llm.WithVoice: a reviewer's) carries
// the voice as the chunk's name, as on the message that lands, and not in
// the metadata.
func TestTupleCarriesTheVoiceAsName(t *testing.T) {
	e := graph.Event{Kind: graph.EventMessages, Node: "review", TaskID: "t1",
		Message: graph.MessageChunk{MessageID: "msg_9", Part: graph.PartText, Text: "Add the label.", Meta: map[string]string{llm.MetaVoice: "reviewer"}}}
	b, err := lcmsg.Tuple(e, lcmsg.RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	var pair [2]map[string]any
	if err := json.Unmarshal(b, &pair); err != nil {
		t.Fatal(err)
	}
	if pair[0]["name"] != "reviewer" || pair[0]["content"] != "Add the label." {
		t.Errorf("chunk %v, want the voice as its name", pair[0])
	}
	if _, ok := pair[1][llm.MetaVoice]; ok {
		t.Errorf("the metadata repeats the voice: %v", pair[1])
	}
}
