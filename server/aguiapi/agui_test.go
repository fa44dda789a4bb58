package aguiapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

// A streamed run: RUN_STARTED first, RUN_FINISHED last with the success
// outcome; reasoning before the answer; every message and step closed;
// the snapshot and the deltas replay to the thread's state.
func TestStreamedRun(t *testing.T) {
	e := newEnv(t, 0)
	evs := e.run("chat-a", RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "hi")}})
	if evs[0].Type != RunStarted || evs[0].ThreadID != "t1" || evs[0].RunID != "r1" {
		t.Fatalf("first event %+v", evs[0])
	}
	last := evs[len(evs)-1]
	if last.Type != RunFinished || last.Outcome == nil || last.Outcome.Type != "success" || last.RunID != "r1" {
		t.Fatalf("last event %+v", last)
	}
	var text, reasoning strings.Builder
	open := map[string]int{}
	var state any
	for i, ev := range evs {
		switch ev.Type {
		case TextMessageContent:
			text.WriteString(ev.Delta.(string))
			if reasoning.Len() == 0 {
				t.Errorf("event %d: answer text before the reasoning", i)
			}
		case ReasoningMessageContent:
			reasoning.WriteString(ev.Delta.(string))
		case TextMessageStart, ReasoningMessageStart, ReasoningStart:
			open[ev.Type[:4]+ev.MessageID]++
		case TextMessageEnd, ReasoningMessageEnd, ReasoningEnd:
			open[ev.Type[:4]+ev.MessageID]--
		case StepStarted:
			open["step "+ev.StepName]++
		case StepFinished:
			open["step "+ev.StepName]--
		case StateSnapshot:
			if err := json.Unmarshal(ev.Snapshot, &state); err != nil {
				t.Fatal(err)
			}
		case StateDelta:
			b, _ := json.Marshal(ev.Delta)
			var ops []PatchOp
			if err := json.Unmarshal(b, &ops); err != nil {
				t.Fatal(err)
			}
			var err error
			if state, err = apply(state, ops); err != nil {
				t.Fatalf("delta %s: %v", b, err)
			}
		}
	}
	if text.String() != Answer || reasoning.String() != Thinking {
		t.Errorf("text %q, reasoning %q", text.String(), reasoning.String())
	}
	for k, n := range open {
		if n != 0 {
			t.Errorf("%s opened %d more times than closed", k, n)
		}
	}
	var want any
	if err := json.Unmarshal(e.threadValues("t1"), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(state, want) {
		t.Errorf("replayed state %v\nthread's %v", state, want)
	}
}

// The whole history is sent each time; only the new message reaches the
// thread.
func TestHistoryIsNotAppendedTwice(t *testing.T) {
	e := newEnv(t, 0)
	e.run("Chat", RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "one")}}) // by name
	hist := []Message{user("m1", "one"), {ID: "a1", Role: "assistant", Content: json.RawMessage(`"` + Answer + `"`)}, user("m2", "two")}
	e.run("chat", RunAgentInput{ThreadID: "t1", RunID: "r2", Messages: hist}) // by graph
	var v struct {
		Messages []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(e.threadValues("t1"), &v); err != nil {
		t.Fatal(err)
	}
	var humans []string
	for _, m := range v.Messages {
		if m.Type == "human" {
			humans = append(humans, m.Content)
		}
	}
	if fmt.Sprint(humans) != "[one two]" || len(v.Messages) != 4 {
		t.Errorf("thread messages %+v; want one, answer, two, answer", v.Messages)
	}
}

// A frontend tool call ends the run with the success outcome and the
// call pending; the client's tool message answers it and the run goes on.
func TestFrontendTool(t *testing.T) {
	e := newEnv(t, 0)
	tools := []Tool{{Name: ClientTool, Description: "where the user is", Parameters: json.RawMessage(`{"type":"object"}`)}}
	evs := e.run("helper-a", RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "where am I?")}, Tools: tools})
	last := evs[len(evs)-1]
	if last.Outcome == nil || last.Outcome.Type != "success" || len(last.Outcome.PendingToolCallIDs) != 1 {
		t.Fatalf("last event %+v; want success with one pending call", last)
	}
	callID := last.Outcome.PendingToolCallIDs[0]
	var start *Event
	for i := range evs {
		if evs[i].Type == ToolCallStart {
			start = &evs[i]
		}
	}
	if start == nil || start.ToolCallID != callID || start.ToolCallName != ClientTool || start.ParentMessageID == "" {
		t.Fatalf("TOOL_CALL_START %+v; want the pending call", start)
	}
	hist := []Message{user("m1", "where am I?"),
		{ID: start.ParentMessageID, Role: "assistant", ToolCalls: []ToolCall{{ID: callID, Type: "function", Function: FunctionCall{Name: ClientTool, Arguments: `{"precision":"city"}`}}}},
		{ID: "t1", Role: "tool", ToolCallID: callID, Content: json.RawMessage(`"Lisbon"`)}}
	evs = e.run("helper-a", RunAgentInput{ThreadID: "t1", RunID: "r2", Messages: hist, Tools: tools})
	var text strings.Builder
	for _, ev := range evs {
		if ev.Type == TextMessageContent {
			text.WriteString(ev.Delta.(string))
		}
	}
	if last := evs[len(evs)-1]; text.String() != AfterTool || last.Outcome == nil || len(last.Outcome.PendingToolCallIDs) != 0 {
		t.Errorf("text %q, last %+v", text.String(), last)
	}
	if v := string(e.threadValues("t1")); !strings.Contains(v, `"content":"Lisbon"`) || strings.Count(v, `"type":"human"`) != 1 {
		t.Errorf("thread values %s; want the tool result once and one user message", v)
	}
}

// A planner question ends with the interrupt outcome; a resume entry
// answers it and the planner asks its next question.
func TestInterruptAndResume(t *testing.T) {
	e := newEnv(t, 0)
	evs := e.run("planner-a", RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "Organise our offsite")}})
	last := evs[len(evs)-1]
	if last.Outcome == nil || last.Outcome.Type != "interrupt" || len(last.Outcome.Interrupts) != 1 {
		t.Fatalf("last event %+v; want one interrupt", last)
	}
	in := last.Outcome.Interrupts[0]
	if in.Reason != "question" || !strings.Contains(in.Message, "Lisbon") || len(in.ResponseSchema) == 0 {
		t.Errorf("interrupt %+v", in)
	}
	// A new message while it waits is refused.
	if st, b := e.post("planner-a", RunAgentInput{ThreadID: "t1", RunID: "r2", Messages: []Message{user("m1", "Organise our offsite"), user("m2", "hello?")}}); st != http.StatusConflict || !strings.Contains(string(b), in.ID) {
		t.Errorf("a new message while waiting: %d %s; want a 409 naming the interrupt", st, b)
	}
	evs = e.run("planner-a", RunAgentInput{ThreadID: "t1", RunID: "r3", Messages: []Message{user("m1", "Organise our offsite")},
		Resume: []ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: json.RawMessage(`"Lisbon"`)}}})
	last = evs[len(evs)-1]
	if last.Outcome == nil || last.Outcome.Type != "interrupt" || last.Outcome.Interrupts[0].ID == in.ID {
		t.Fatalf("after the answer: %+v; want the next question", last)
	}
}

// Every refusal names its cause, before any run.
func TestErrors(t *testing.T) {
	e := newEnv(t, 2048)
	ok := RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "hi")}}
	with := func(f func(*RunAgentInput)) RunAgentInput {
		in := ok
		f(&in)
		return in
	}
	cases := []struct {
		name      string
		assistant string
		body      any
		status    int
		want      string
	}{
		{"unknown assistant", "nobody", ok, 404, `nobody`},
		{"malformed body", "chat-a", `{"threadId": `, 400, "JSON"},
		{"not an object", "chat-a", `[1]`, 422, "object"},
		{"missing messages", "chat-a", `{"threadId":"t","runId":"r"}`, 422, "/messages"},
		{"empty thread ID", "chat-a", with(func(in *RunAgentInput) { in.ThreadID = "" }), 422, "/threadId"},
		{"bad role", "chat-a", with(func(in *RunAgentInput) { in.Messages = []Message{{ID: "x", Role: "robot"}} }), 422, "robot"},
		{"image content", "chat-a", with(func(in *RunAgentInput) {
			in.Messages = []Message{{ID: "x", Role: "user", Content: json.RawMessage(`[{"type":"image"}]`)}}
		}), 422, "only text parts"},
		{"oversized body", "chat-a", with(func(in *RunAgentInput) { in.Messages = []Message{user("x", strings.Repeat("a", 4096))} }), 413, ""},
		{"resume when not waiting", "chat-a", with(func(in *RunAgentInput) {
			in.Resume = []ResumeEntry{{InterruptID: "i1", Status: "resolved", Payload: json.RawMessage(`1`)}}
		}), 409, "not waiting"},
		{"bad resume status", "chat-a", with(func(in *RunAgentInput) { in.Resume = []ResumeEntry{{InterruptID: "i1", Status: "maybe"}} }), 422, "/resume/0/status"},
		{"tools on a graph without client tools", "chat-a", with(func(in *RunAgentInput) { in.Tools = []Tool{{Name: "x"}} }), 422, "(graph chat) does not accept client tools"},
		{"bad tool name", "helper-a", with(func(in *RunAgentInput) { in.Tools = []Tool{{Name: "a b"}} }), 422, "/tools"},
		{"tool result for no call", "helper-a", with(func(in *RunAgentInput) {
			in.Messages = []Message{user("m1", "hi"), {ID: "t", Role: "tool", ToolCallID: "nope", Content: json.RawMessage(`"x"`)}}
		}), 422, `no frontend tool call`},
		{"nothing new", "chat-a", with(func(in *RunAgentInput) { in.Messages = nil }), 422, "nothing new"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := e.post(c.assistant, c.body)
			if st != c.status || !strings.Contains(string(b), c.want) {
				t.Errorf("%d %s; want %d containing %q", st, b, c.status, c.want)
			}
		})
	}
}

// The patch of two states replays to the second.
func TestDiff(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{`{"messages":[1,2],"x":{"y":1}}`, `{"messages":[1,2,3],"x":{"y":2},"z/~":null}`},
		{`{"l":[1,2,3],"o":{"k":1}}`, `{"l":[1],"o":{}}`},
		{`{"a":1}`, `[1]`},
	} {
		a, _ := decodeState(json.RawMessage(c.a))
		b, _ := decodeState(json.RawMessage(c.b))
		ops := diff("", a, b, nil)
		raw, _ := json.Marshal(ops)
		var back []PatchOp
		_ = json.Unmarshal(raw, &back)
		got, err := apply(a, back)
		gj, _ := json.Marshal(got)
		bj, _ := json.Marshal(b)
		if err != nil || string(gj) != string(bj) {
			t.Errorf("diff(%s, %s) = %s replays to %v (%v)", c.a, c.b, raw, got, err)
		}
	}
	a, _ := decodeState(json.RawMessage(`{"messages":[1,2,3]}`))
	b, _ := decodeState(json.RawMessage(`{"messages":[1,2,3,4]}`))
	if ops := diff("", a, b, nil); len(ops) != 1 || ops[0].Path != "/messages/3" {
		t.Errorf("an appended message: %+v; want one add", ops)
	}
}

// apply applies add, remove and replace operations (what diff makes).
func apply(doc any, ops []PatchOp) (any, error) {
	for _, op := range ops {
		if op.Path == "" {
			doc = op.Value
			continue
		}
		toks := strings.Split(op.Path[1:], "/")
		for i := range toks {
			toks[i] = strings.ReplaceAll(strings.ReplaceAll(toks[i], "~1", "/"), "~0", "~")
		}
		var err error
		if doc, err = applyAt(doc, toks, op); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

func applyAt(doc any, toks []string, op PatchOp) (any, error) {
	k := toks[0]
	switch d := doc.(type) {
	case map[string]any:
		if len(toks) > 1 {
			v, err := applyAt(d[k], toks[1:], op)
			d[k] = v
			return d, err
		}
		if op.Op == "remove" {
			delete(d, k)
		} else {
			d[k] = op.Value
		}
		return d, nil
	case []any:
		i, err := strconv.Atoi(k)
		if err != nil || i > len(d) {
			return nil, fmt.Errorf("bad index %q", k)
		}
		if len(toks) > 1 {
			v, err := applyAt(d[i], toks[1:], op)
			d[i] = v
			return d, err
		}
		switch op.Op {
		case "add":
			return append(d[:i], append([]any{op.Value}, d[i:]...)...), nil
		case "remove":
			return append(d[:i], d[i+1:]...), nil
		default:
			d[i] = op.Value
			return d, nil
		}
	}
	return nil, fmt.Errorf("cannot descend into %T", doc)
}

// A router's sub-agent call (a task whose call names its own node) is a
// sub-agent invocation: started under the router's tool call, finished
// with success, an error, or suspended when the run stops inside it.
func TestSubagentEvents(t *testing.T) {
	var evs []Event
	tr := newTranslator(func(ev Event) { evs = append(evs, ev) })
	add := func(name string, v any) {
		b, _ := json.Marshal(v)
		tr.add(db.Event{Event: name, Data: b})
	}
	add("updates", map[string]any{"router": map[string]any{"messages": []any{map[string]any{"type": "ai", "id": "m1", "content": "",
		"tool_calls": []any{map[string]any{"id": "c1", "name": "writer", "args": map[string]any{}}, map[string]any{"id": "c2", "name": "search", "args": map[string]any{}}, map[string]any{"id": "c3", "name": "writer", "args": map[string]any{}}}}}}})
	add("tasks", map[string]any{"id": "t1", "name": "writer", "input": map[string]any{}, "payload": map[string]any{"id": "c1", "name": "writer"}})
	add("tasks", map[string]any{"id": "t2", "name": "tools", "input": map[string]any{}, "payload": map[string]any{"id": "c2", "name": "search"}})
	add("tasks", map[string]any{"id": "t3", "name": "writer", "input": map[string]any{}, "payload": map[string]any{"id": "c3", "name": "writer"}})
	add("tasks", map[string]any{"id": "t1", "name": "writer", "result": map[string]any{}, "error": "boom", "interrupts": []any{}})
	add("tasks", map[string]any{"id": "t2", "name": "tools", "result": map[string]any{}, "error": nil, "interrupts": []any{}})
	tr.finish()
	var got []string
	for _, ev := range evs {
		switch ev.Type {
		case SubagentStarted:
			got = append(got, fmt.Sprintf("start %s %s %s", ev.SubagentRunID, ev.Name, ev.ParentToolCallID))
		case SubagentFinished:
			got = append(got, fmt.Sprintf("finish %s %s", ev.SubagentRunID, ev.Outcome.Type))
		case SubagentError:
			got = append(got, fmt.Sprintf("error %s %s", ev.SubagentRunID, ev.Message))
		case StepStarted, StepFinished:
			got = append(got, ev.Type+" "+ev.StepName)
		}
	}
	want := []string{"STEP_STARTED writer", "start t1 writer c1", "STEP_STARTED tools", "start t3 writer c3",
		"error t1 boom", "STEP_FINISHED tools", "finish t3 suspended", "STEP_FINISHED writer"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
}

// A frontend call the run waits on that did not stream with a top-level
// message (made inside a subgraph) is sent before the end, once, and
// counted in the history the client now holds.
func TestPendingCallNotStreamed(t *testing.T) {
	var evs []Event
	tr := newTranslator(func(ev Event) { evs = append(evs, ev) })
	tr.pendingCall("c9", "pick", `{"a":1}`)
	tr.pendingCall("c9", "pick", `{"a":1}`)
	if len(evs) != 3 || evs[0].Type != ToolCallStart || evs[0].ToolCallName != "pick" || evs[1].Delta != `{"a":1}` || evs[2].Type != ToolCallEnd {
		t.Fatalf("events %+v; want one start, args and end", evs)
	}
	if got := tr.turns(); len(got) != 1 || got[0] != turnOf("assistant", "", []string{"c9"}) {
		t.Errorf("turns %+v", got)
	}
}
