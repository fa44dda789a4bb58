package openaiapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// mixedTools is the client tool the mixed graph calls.
var mixedTools = []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_location", "description": "where the user is",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"precision": map[string]any{"type": "string"}}}}}}

// mixedStart runs the first turn of the mixed graph: one reply calls the
// client's tool and a write tool that needs approval. The reply ends with
// finish_reason tool_calls (the client must run its tool) and also
// presents the approval, status waiting. It returns the history to send
// next (the tool result included) and the thread.
func mixedStart(t *testing.T, e *env) ([]any, string) {
	t.Helper()
	msgs := []any{map[string]any{"role": "user", "content": "Tell Ann where I am"}}
	got, h := e.complete(map[string]any{"model": "mixed", "messages": msgs, "tools": mixedTools})
	c := got.Choices[0]
	if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_location" {
		t.Fatalf("choice %+v; want finish tool_calls with the client's call", c)
	}
	if h.Get(HeaderStatus) != "waiting" || got.Trellis == nil || got.Trellis.Interaction == nil || got.Trellis.Interaction.Kind != "tool_approval" ||
		!strings.Contains(c.Message.Content, "send_note") {
		t.Fatalf("status %q, extension %+v, content %q; want the approval presented beside the call", h.Get(HeaderStatus), got.Trellis, c.Message.Content)
	}
	call := c.Message.ToolCalls[0]
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": c.Message.Content, "tool_calls": []any{map[string]any{"id": call.ID, "type": "function", "function": map[string]any{"name": "get_location", "arguments": call.Function.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": call.ID, "content": "Lisbon"})
	return msgs, h.Get(HeaderThread)
}

// Client tool calls and a person's approval waiting at once: the tool
// results come first (a plain message is refused naming the calls); they
// resume the calls and the approval still waits, presented with finish
// stop; the person's next message answers it and the run ends.
func TestToolResultsWhileAPersonIsAsked(t *testing.T) {
	e := newEnv(t, 0)
	msgs, thread := mixedStart(t, e)

	// A plain message instead of the tool result: refused, nothing lost.
	plain := append(append([]any{}, msgs[:2]...), map[string]any{"role": "user", "content": "yes"})
	if st, _, b := e.post(map[string]any{"model": "mixed", "messages": plain, "tools": mixedTools}); st != 400 || !strings.Contains(string(b), "tool_call") {
		t.Errorf("a plain message while tool calls wait: %d %s; want a 400 naming the calls", st, b)
	}

	got, h := e.complete(map[string]any{"model": "mixed", "messages": msgs, "tools": mixedTools})
	c := got.Choices[0]
	if c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 || h.Get(HeaderStatus) != "waiting" || h.Get(HeaderThread) != thread ||
		got.Trellis.Interaction == nil || got.Trellis.Interaction.Kind != "tool_approval" {
		t.Fatalf("after the tool result: %+v status %q ext %+v; want the approval still waiting, finish stop", c, h.Get(HeaderStatus), got.Trellis)
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": c.Message.Content}, map[string]any{"role": "user", "content": "approve"})
	got, h = e.complete(map[string]any{"model": "mixed", "messages": msgs, "tools": mixedTools})
	if got.Choices[0].Message.Content != MixedDone || h.Get(HeaderStatus) != "done" || h.Get(HeaderThread) != thread {
		t.Fatalf("after the approval: %+v status %q; want the answer", got.Choices[0], h.Get(HeaderStatus))
	}
	values := string(e.threadValues(thread))
	if !strings.Contains(values, "Lisbon") || !strings.Contains(values, "sent: on my way") {
		t.Errorf("thread values %s; want both tool results", values)
	}
	if got := e.userMessages(thread); len(got) != 1 {
		t.Errorf("user messages %q; want the one (answers are not messages)", got)
	}
}

// The tool results and a structured answer (trellis.answer) in one
// request resume both at once.
func TestToolResultsWithAStructuredAnswer(t *testing.T) {
	e := newEnv(t, 0)
	msgs, thread := mixedStart(t, e)
	got, h := e.complete(map[string]any{"model": "mixed", "messages": msgs, "tools": mixedTools,
		"trellis": map[string]any{"answer": json.RawMessage(`{"action":"approve"}`)}})
	if got.Choices[0].Message.Content != MixedDone || h.Get(HeaderStatus) != "done" || h.Get(HeaderThread) != thread {
		t.Fatalf("results and answer together: %+v status %q; want the answer", got.Choices[0], h.Get(HeaderStatus))
	}
	// A structured answer that does not fit is asked again and the tool
	// result is kept: the next message answers the approval alone.
	e2 := newEnv(t, 0)
	msgs, thread = mixedStart(t, e2)
	got, h = e2.complete(map[string]any{"model": "mixed", "messages": msgs, "tools": mixedTools,
		"trellis": map[string]any{"answer": json.RawMessage(`{"action":"maybe"}`)}})
	c := got.Choices[0]
	if !strings.Contains(c.Message.Content, "did not fit") || len(c.Message.ToolCalls) != 0 || got.Trellis.Interaction == nil || got.Trellis.Interaction.Kind != "tool_approval" {
		t.Fatalf("a bad answer beside the results: %+v status %q; want the approval asked again", c, h.Get(HeaderStatus))
	}
	// The result is kept with the step (a pending write): the thread
	// waits on the approval only.
	th, err := e2.db.GetThread(context.Background(), DefaultTenant, thread)
	if err != nil || strings.Contains(string(th.Interrupts), "client_tool_call") || !strings.Contains(string(th.Interrupts), "send_note") {
		t.Errorf("thread interrupts %s (%v); want the approval alone", th.Interrupts, err)
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": c.Message.Content}, map[string]any{"role": "user", "content": "yes"})
	got, h = e2.complete(map[string]any{"model": "mixed", "messages": msgs, "tools": mixedTools})
	if got.Choices[0].Message.Content != MixedDone || h.Get(HeaderThread) != thread || !strings.Contains(string(e2.threadValues(thread)), "Lisbon") {
		t.Fatalf("then yes: %+v on %s; want the answer on %s, the tool result in the thread", got.Choices[0], h.Get(HeaderThread), thread)
	}
}

// threadValues reads the thread's state.
func (e *env) threadValues(thread string) json.RawMessage {
	e.t.Helper()
	th, err := e.db.GetThread(context.Background(), DefaultTenant, thread)
	if err != nil {
		e.t.Fatal(err)
	}
	return th.Values
}
