package aguiapi

import (
	"encoding/json"
	"strings"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/convo"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// translator turns a run's logged events into AG-UI events, handed to
// emit in order. It keeps what is open (text and reasoning messages, steps)
// so that everything is closed before the run's last event, and the
// messages it sent, as the client will hold them, for the conversation's
// fingerprint.
type translator struct {
	emit func(Event)

	msgs      map[string]*message // by message ID
	open      []string            // IDs of messages with an open text or reasoning stream
	steps     map[string]int      // open tasks by node name
	stepOrder []string

	state     any // the last state sent (nil before the snapshot)
	snapshot  bool
	sentCalls map[string]bool // tool calls sent (TOOL_CALL_START)
	results   map[string]bool // tool results sent

	subs     map[string]bool // open sub-agent invocations by task ID
	subOrder []string

	// sent are the messages as the client now holds them, in order.
	sent   []*convoMsg
	runErr *Event
}

// message is one model message of the run.
type message struct {
	id                   string
	decided, prose       bool
	textOpen, reasonOpen bool
	started              bool   // TEXT_MESSAGE_START sent
	matched              bool   // a landed copy of it under another ID was found
	voice                string // an internal voice's message (a reviewer): a note, not a reply
	noted                bool   // its note was sent
	held                 strings.Builder
	streamed             strings.Builder
	turn                 *convoMsg
}

// convoMsg is a message the client holds after this run, for the
// fingerprint.
type convoMsg struct {
	role  string
	text  strings.Builder
	calls []string
}

func newTranslator(emit func(Event)) *translator {
	return &translator{emit: emit, msgs: map[string]*message{}, steps: map[string]int{},
		sentCalls: map[string]bool{}, results: map[string]bool{}, subs: map[string]bool{}}
}

// lcMessage is the part of a LangChain message (or chunk) the wire reads.
type lcMessage struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
	// Name is an internal voice's (llm.Message.Name, on its streamed
	// chunks too): the agent's working, sent as a note.
	Name             string `json:"name"`
	AdditionalKwargs struct {
		Reasoning string `json:"reasoning_content"`
	} `json:"additional_kwargs"`
	ToolCalls []struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Status     string `json:"status"`
}

// add reads one logged event of the run.
func (t *translator) add(ev db.Event) {
	mode, ns, _ := strings.Cut(ev.Event, "|")
	if ns != "" {
		return // the run streams its top level only
	}
	switch mode {
	case "messages":
		var tuple [1]lcMessage
		if json.Unmarshal(ev.Data, &tuple) != nil || tuple[0].ID == "" {
			return
		}
		c := tuple[0]
		if c.Name != "" { // a voice's tokens: its note is sent when it lands
			t.msg(c.ID).voice = c.Name
			return
		}
		if r := c.AdditionalKwargs.Reasoning; r != "" {
			t.reasoning(c.ID, r)
		}
		t.chunk(c.ID, lcmsg.Text(c.Content))
	case "updates":
		var byNode map[string]json.RawMessage
		if json.Unmarshal(ev.Data, &byNode) != nil {
			return
		}
		for node, upd := range byNode {
			if node == "__interrupt__" {
				continue // read from the thread when the run ends
			}
			var u struct {
				Messages json.RawMessage `json:"messages"`
			}
			if json.Unmarshal(upd, &u) != nil || len(u.Messages) == 0 {
				continue
			}
			var list []lcMessage
			if json.Unmarshal(u.Messages, &list) != nil {
				var one lcMessage
				if json.Unmarshal(u.Messages, &one) != nil {
					continue
				}
				list = []lcMessage{one}
			}
			for _, m := range list {
				switch m.Type {
				case "ai", "AIMessageChunk":
					t.landed(m)
				case "tool":
					t.toolResult(m)
				}
			}
		}
	case "values":
		t.values(ev.Data)
	case "tasks", "steps":
		// steps (runs.ModeSteps, what the wire asks for) marks a start
		// with start: true; tasks (a run logged by an older server) with
		// its input state.
		var task struct {
			ID      string          `json:"id"`
			Name    string          `json:"name"`
			Start   bool            `json:"start"`
			Input   json.RawMessage `json:"input"`
			Payload *struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"payload"`
			Error      *string `json:"error"`
			Interrupts []struct {
				ID string `json:"id"`
			} `json:"interrupts"`
		}
		if json.Unmarshal(ev.Data, &task) != nil || task.Name == "" {
			return
		}
		// A router runs each sub-agent's calls in a node named after the
		// agent (agent/router): a task whose call (its Send payload) names
		// its own node is a sub-agent's invocation.
		sub := task.Payload != nil && task.Payload.Name == task.Name && task.ID != ""
		if task.Start || task.Input != nil {
			t.stepStarted(task.Name)
			if sub {
				t.subStarted(task.ID, task.Name, task.Payload.ID)
			}
			return
		}
		if t.subs[task.ID] { // a task's end carries no payload
			var ids []string
			for _, in := range task.Interrupts {
				ids = append(ids, in.ID)
			}
			t.subEnded(task.ID, task.Error, ids)
		}
		t.stepFinished(task.Name)
	case "custom":
		t.emit(Event{Type: Custom, Name: "trellis", Value: ev.Data})
	case "error":
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(ev.Data, &e)
		t.runErr = &Event{Type: RunError, Message: strings.TrimSpace(e.Message), Code: e.Error}
		if t.runErr.Message == "" {
			t.runErr.Message = "the run failed"
		}
	}
}

func (t *translator) msg(id string) *message {
	m := t.msgs[id]
	if m == nil {
		m = &message{id: id}
		t.msgs[id] = m
	}
	return m
}

// reasoning streams a model message's reasoning.
func (t *translator) reasoning(id, s string) {
	m := t.msg(id)
	rid := id + "-reasoning"
	if !m.reasonOpen {
		m.reasonOpen = true
		t.open = append(t.open, id)
		t.emit(Event{Type: ReasoningStart, MessageID: rid})
		t.emit(Event{Type: ReasoningMessageStart, MessageID: rid, Role: "reasoning"})
	}
	t.emit(Event{Type: ReasoningMessageContent, MessageID: rid, Delta: s})
}

// chunk handles a piece of a model message's text: prose streams, a
// message that starts like JSON (a planner's structured reply) is held
// until it lands in the messages.
func (t *translator) chunk(id, s string) {
	if s == "" {
		return
	}
	m := t.msg(id)
	if !m.decided {
		m.held.WriteString(s)
		lead := strings.TrimSpace(m.held.String())
		if lead == "" {
			return
		}
		m.decided, m.prose = true, lead[0] != '{' && lead[0] != '['
		if !m.prose {
			return
		}
		s = m.held.String()
		m.held.Reset()
	} else if !m.prose {
		m.held.WriteString(s)
		return
	}
	t.closeReasoning(m)
	t.text(m, s)
}

// text sends text of m, opening its text message first.
func (t *translator) text(m *message, s string) {
	if !m.started {
		m.started, m.textOpen = true, true
		t.open = append(t.open, m.id)
		m.turn = &convoMsg{role: "assistant"}
		t.sent = append(t.sent, m.turn)
		t.emit(Event{Type: TextMessageStart, MessageID: m.id, Role: "assistant"})
	}
	m.streamed.WriteString(s)
	m.turn.text.WriteString(s)
	t.emit(Event{Type: TextMessageContent, MessageID: m.id, Delta: s})
}

func (t *translator) closeReasoning(m *message) {
	if m.reasonOpen {
		m.reasonOpen = false
		rid := m.id + "-reasoning"
		t.emit(Event{Type: ReasoningMessageEnd, MessageID: rid})
		t.emit(Event{Type: ReasoningEnd, MessageID: rid})
	}
}

func (t *translator) close(m *message) {
	t.closeReasoning(m)
	if m.textOpen {
		m.textOpen = false
		t.emit(Event{Type: TextMessageEnd, MessageID: m.id})
	}
}

// landed handles an AI message written to the thread's messages: the rest
// of its text if it was held or never streamed, then its tool calls.
func (t *translator) landed(lm lcMessage) {
	if lm.ID == "" {
		return
	}
	m := t.msg(lm.ID)
	text := lcmsg.Text(lm.Content)
	if lm.Name != "" {
		m.voice = lm.Name
	}
	if m.voice != "" {
		t.note(m, text)
	} else if !m.started && strings.TrimSpace(text) != "" && !t.copyOfStreamed(m, text) {
		t.closeReasoning(m)
		t.text(m, text)
	}
	t.close(m)
	for _, c := range lm.ToolCalls {
		if c.ID == "" || t.sentCalls[c.ID] {
			continue
		}
		t.sentCalls[c.ID] = true
		if m.turn == nil {
			m.turn = &convoMsg{role: "assistant"}
			t.sent = append(t.sent, m.turn)
		}
		m.turn.calls = append(m.turn.calls, c.ID)
		args := string(c.Args)
		if args == "" || args == "null" {
			args = "{}"
		}
		t.emit(Event{Type: ToolCallStart, ToolCallID: c.ID, ToolCallName: c.Name, ParentMessageID: m.id})
		t.emit(Event{Type: ToolCallArgs, ToolCallID: c.ID, Delta: args})
		t.emit(Event{Type: ToolCallEnd, ToolCallID: c.ID})
	}
}

// note sends an internal voice's message (a reviewer's critique) as an
// activity of type NoteActivity, once: the agent's working, which the
// client shows apart from its replies and which is no turn of the
// conversation the client holds.
func (t *translator) note(m *message, text string) {
	if m.noted || strings.TrimSpace(text) == "" {
		return
	}
	m.noted = true
	t.emit(Event{Type: ActivitySnapshot, MessageID: m.id, ActivityType: NoteActivity,
		Content: map[string]any{"author": m.voice, "text": text}})
}

// copyOfStreamed reports whether text already streamed under another
// message ID (a node that appends the model's text as a new message).
func (t *translator) copyOfStreamed(m *message, text string) bool {
	for _, o := range t.msgs {
		if o != m && o.started && !o.matched && strings.TrimSpace(o.streamed.String()) == strings.TrimSpace(text) {
			o.matched = true
			return true
		}
	}
	return false
}

// pendingCall sends a frontend tool call the run waits on that did not
// stream as part of a top-level message (one made inside a subgraph): the
// client holds it as an assistant message of its own, named by the call.
func (t *translator) pendingCall(id, name, args string) {
	if t.sentCalls[id] {
		return
	}
	t.sentCalls[id] = true
	t.sent = append(t.sent, &convoMsg{role: "assistant", calls: []string{id}})
	if args == "" {
		args = "{}"
	}
	t.emit(Event{Type: ToolCallStart, ToolCallID: id, ToolCallName: name})
	t.emit(Event{Type: ToolCallArgs, ToolCallID: id, Delta: args})
	t.emit(Event{Type: ToolCallEnd, ToolCallID: id})
}

// toolResult sends a tool message that answers a call the run made.
func (t *translator) toolResult(lm lcMessage) {
	if lm.ToolCallID == "" || t.results[lm.ToolCallID] {
		return
	}
	t.results[lm.ToolCallID] = true
	content := lcmsg.Text(lm.Content)
	id := lm.ID
	if id == "" {
		id = "result-" + lm.ToolCallID
	}
	turn := &convoMsg{role: "tool"}
	turn.text.WriteString(content)
	turn.calls = []string{lm.ToolCallID}
	// The client puts a result after its call's message and the results
	// before it; the fingerprint follows.
	at := len(t.sent)
	for i, s := range t.sent {
		for _, c := range s.calls {
			if s.role == "assistant" && c == lm.ToolCallID {
				at = i + 1
				for at < len(t.sent) && t.sent[at].role == "tool" {
					at++
				}
			}
		}
	}
	t.sent = append(t.sent[:at], append([]*convoMsg{turn}, t.sent[at:]...)...)
	t.emit(Event{Type: ToolCallResult, MessageID: id, ToolCallID: lm.ToolCallID, Content: &content, Role: "tool"})
}

// values sends the state: a snapshot the first time, then the JSON Patch
// from the state last sent.
func (t *translator) values(raw json.RawMessage) {
	v, err := decodeState(raw)
	if err != nil {
		return
	}
	if _, isInterrupt := v.(map[string]any)["__interrupt__"]; isInterrupt {
		return
	}
	if !t.snapshot {
		t.snapshot, t.state = true, v
		t.emit(Event{Type: StateSnapshot, Snapshot: raw})
		return
	}
	ops := diff("", t.state, v, nil)
	t.state = v
	if len(ops) > 0 {
		t.emit(Event{Type: StateDelta, Delta: ops})
	}
}

func (t *translator) stepStarted(name string) {
	t.steps[name]++
	if t.steps[name] == 1 {
		t.stepOrder = append(t.stepOrder, name)
		t.emit(Event{Type: StepStarted, StepName: name})
	}
}

func (t *translator) stepFinished(name string) {
	if t.steps[name] == 0 {
		return
	}
	t.steps[name]--
	if t.steps[name] == 0 {
		t.emit(Event{Type: StepFinished, StepName: name})
	}
}

// subStarted opens a sub-agent invocation (SUBAGENT_STARTED), the
// router's tool call its parent.
func (t *translator) subStarted(taskID, name, callID string) {
	if t.subs[taskID] {
		return
	}
	t.subs[taskID] = true
	t.subOrder = append(t.subOrder, taskID)
	ev := Event{Type: SubagentStarted, SubagentRunID: taskID, Name: name}
	if t.sentCalls[callID] {
		ev.ParentToolCallID = callID
	}
	t.emit(ev)
}

// subEnded closes a sub-agent invocation: SUBAGENT_ERROR when its task
// failed, SUBAGENT_FINISHED suspended when it stopped for interrupts,
// success otherwise.
func (t *translator) subEnded(taskID string, errText *string, interrupts []string) {
	if !t.subs[taskID] {
		return
	}
	delete(t.subs, taskID)
	switch {
	case errText != nil && *errText != "":
		t.emit(Event{Type: SubagentError, SubagentRunID: taskID, Message: *errText})
	case len(interrupts) > 0:
		t.emit(Event{Type: SubagentFinished, SubagentRunID: taskID, Outcome: &Outcome{Type: "suspended", InterruptIDs: interrupts}})
	default:
		t.emit(Event{Type: SubagentFinished, SubagentRunID: taskID, Outcome: &Outcome{Type: "success"}})
	}
}

// finish closes everything still open: messages, sub-agents (suspended:
// an interrupted task never reports its end), then steps.
func (t *translator) finish() {
	for _, id := range t.open {
		t.close(t.msgs[id])
	}
	t.open = nil
	for _, id := range t.subOrder {
		if t.subs[id] {
			delete(t.subs, id)
			t.emit(Event{Type: SubagentFinished, SubagentRunID: id, Outcome: &Outcome{Type: "suspended"}})
		}
	}
	for _, name := range t.stepOrder {
		if t.steps[name] > 0 {
			t.steps[name] = 0
			t.emit(Event{Type: StepFinished, StepName: name})
		}
	}
}

// turns are the messages the client holds after the run, as the
// fingerprint reads them.
func (t *translator) turns() []convo.Turn {
	out := make([]convo.Turn, 0, len(t.sent))
	for _, s := range t.sent {
		out = append(out, turnOf(s.role, s.text.String(), s.calls))
	}
	return out
}

// turnOf is a message as the fingerprint reads it: its role, its text and
// the IDs of its tool calls (of the call it answers, for a tool message).
func turnOf(role, text string, calls []string) convo.Turn {
	if len(calls) > 0 {
		text = strings.TrimSpace(text) + "\x00" + strings.Join(calls, "\x00")
	}
	return convo.Turn{Role: role, Text: text}
}
