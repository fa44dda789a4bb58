package openaiapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// maxEvents bounds the progress events a completion lists.
const maxEvents = 200

// translator turns a run's logged events into what the wire sends: answer
// text, reasoning text and progress events, handed to emit as they come.
//
// The answer is what the run adds to the thread's messages at the top
// level. Model text streams as it comes, except a message that starts like
// JSON (a planner's or router's structured reply): it is held, and sent
// only if it lands in the messages. A message that lands without having
// streamed (a node that does not stream) is sent whole.
type translator struct {
	emit    func(d Delta, ev *ProgressEvent)
	msgs    map[string]*streamed
	content strings.Builder
	reason  strings.Builder
	events  []ProgressEvent
	waiting []pending
	runErr  string
}

// streamed is one model message's state: undecided until its first
// non-space character, then streaming (prose) or held (JSON).
type streamed struct {
	decided, prose, sent bool
	buf                  strings.Builder
	// text is what streamed; matched is set once a landed message was
	// found to be this one under another ID (a node that writes the
	// model's text as a new message).
	text    strings.Builder
	matched bool
}

func newTranslator(emit func(Delta, *ProgressEvent)) *translator {
	return &translator{emit: emit, msgs: map[string]*streamed{}}
}

func (t *translator) text(s string) {
	if s == "" {
		return
	}
	t.content.WriteString(s)
	t.emit(Delta{Content: s}, nil)
}

// startMessage separates a new message's text from the one before.
func (t *translator) startMessage() {
	if t.content.Len() > 0 && !strings.HasSuffix(t.content.String(), "\n\n") {
		t.text("\n\n")
	}
}

func (t *translator) progress(ev ProgressEvent) {
	if len(t.events) < maxEvents {
		t.events = append(t.events, ev)
	}
	t.emit(Delta{}, &ev)
}

// lcChunk is the part of a LangChain message (chunk) the wire reads.
type lcChunk struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
	// Name is an internal voice's (llm.Message.Name: a reviewer's
	// critique), whose text is the agent's working, not its reply.
	Name             string `json:"name"`
	AdditionalKwargs struct {
		Reasoning string `json:"reasoning_content"`
	} `json:"additional_kwargs"`
}

// add reads one logged event.
func (t *translator) add(ev db.Event) {
	mode, ns, _ := strings.Cut(ev.Event, "|")
	switch mode {
	case "messages":
		if ns != "" {
			return // a subgraph's model talking to itself; its progress comes as events
		}
		var tuple [1]lcChunk // [chunk, metadata]: the metadata is skipped
		if json.Unmarshal(ev.Data, &tuple) != nil {
			return
		}
		c := tuple[0]
		if c.Name != "" {
			return // an internal voice's tokens (a reviewer's): the agent's working, not its reply
		}
		if r := c.AdditionalKwargs.Reasoning; r != "" {
			t.reason.WriteString(r)
			t.emit(Delta{ReasoningContent: r}, nil)
		}
		t.chunk(c.ID, lcmsg.Text(c.Content))
	case "updates":
		if ns != "" {
			return
		}
		var byNode map[string]json.RawMessage
		if json.Unmarshal(ev.Data, &byNode) != nil {
			return
		}
		if raw, ok := byNode["__interrupt__"]; ok {
			var ps []pending
			if json.Unmarshal(raw, &ps) == nil {
				t.waiting = ps
			}
			return
		}
		for _, upd := range byNode {
			var u struct {
				Messages []lcChunk `json:"messages"`
			}
			if json.Unmarshal(upd, &u) != nil {
				continue
			}
			for _, m := range u.Messages {
				if m.Type != "ai" && m.Type != "AIMessageChunk" || m.Name != "" {
					continue
				}
				t.landed(m.ID, lcmsg.Text(m.Content))
			}
		}
	case "custom":
		t.custom(ev.Data)
	case "error":
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(ev.Data, &e)
		t.runErr = strings.TrimSpace(e.Error + ": " + e.Message)
	}
}

// chunk handles one piece of a model message's text.
func (t *translator) chunk(id, s string) {
	if s == "" {
		return
	}
	m := t.msgs[id]
	if m == nil {
		m = &streamed{}
		t.msgs[id] = m
	}
	if m.decided {
		if m.prose {
			m.text.WriteString(s)
			t.text(s)
		} else {
			m.buf.WriteString(s)
		}
		return
	}
	m.buf.WriteString(s)
	lead := strings.TrimSpace(m.buf.String())
	if lead == "" {
		return
	}
	m.decided = true
	m.prose = lead[0] != '{' && lead[0] != '['
	if m.prose {
		t.startMessage()
		m.sent = true
		m.text.WriteString(m.buf.String())
		t.text(m.buf.String())
		m.buf.Reset()
	}
}

// landed handles an AI message written to the thread's messages.
func (t *translator) landed(id, s string) {
	m := t.msgs[id]
	if m != nil && m.sent {
		return
	}
	if m == nil {
		m = &streamed{}
		t.msgs[id] = m
	}
	m.decided, m.prose, m.sent = true, true, true
	if strings.TrimSpace(s) == "" {
		return
	}
	for _, o := range t.msgs {
		if o != m && o.prose && !o.matched && strings.TrimSpace(o.text.String()) == strings.TrimSpace(s) {
			o.matched = true // streamed already, under the model's message ID
			return
		}
	}
	t.startMessage()
	t.text(s)
}

// custom turns a custom event into progress: the plan-and-execute agent's
// events into status lines, tool calls and results; any other into a
// status event carrying its data.
func (t *translator) custom(data json.RawMessage) {
	var e planexec.Event
	if json.Unmarshal(data, &e) != nil || e.Kind == "" {
		t.progress(ProgressEvent{Type: "status", Data: data})
		return
	}
	status := func(format string, args ...any) {
		t.progress(ProgressEvent{Type: "status", Step: e.StepID, Text: fmt.Sprintf(format, args...)})
	}
	switch e.Kind {
	case planexec.EventPlanReady:
		status("Plan ready: %d steps", stepsOf(e.Plan))
	case planexec.EventReplanned:
		status("Plan revised: %d steps", stepsOf(e.Plan))
	case planexec.EventStepStarted:
		status("Step %s started: %s", e.StepID, e.Title)
	case planexec.EventStepFinished:
		status("Step %s finished", e.StepID)
	case planexec.EventStepFailed:
		status("Step %s failed: %s", e.StepID, e.Error)
	case planexec.EventStepSkipped:
		status("Step %s skipped: %s", e.StepID, e.Error)
	case planexec.EventWaiting:
		status("Waiting for you")
	case planexec.EventDelivered:
		status("Answer delivered")
	case planexec.EventToolCall, planexec.EventToolResult:
		if e.Tool == nil {
			return
		}
		pe := ProgressEvent{Type: "tool_call", Step: e.StepID, Tool: e.Tool.Name, CallID: e.Tool.CallID, Arguments: e.Tool.Arguments}
		if e.Kind == planexec.EventToolResult {
			pe = ProgressEvent{Type: "tool_result", Step: e.StepID, Tool: e.Tool.Name, CallID: e.Tool.CallID, Result: e.Tool.Result, IsError: e.Tool.IsError}
		}
		t.progress(pe)
	default:
		t.progress(ProgressEvent{Type: "status", Step: e.StepID, Data: data})
	}
}

func stepsOf(p *planexec.Plan) int {
	if p == nil {
		return 0
	}
	return len(p.Steps)
}
