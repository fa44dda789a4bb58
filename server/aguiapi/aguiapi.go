// Package aguiapi serves Trellis assistants over AG-UI (protocol 1.0),
// the event protocol agent front-ends such as CopilotKit speak: POST
// /ag-ui/{assistant} takes a RunAgentInput and answers a server-sent event
// stream of AG-UI events. It is a thin translator over the run service
// (server/runs): the input becomes a run on the client's thread (created on
// first use), the run's logged events become AG-UI events, and a run that
// stops for a person ends with the protocol's interrupt outcome, answered
// by the next input's resume entries. Frontend tools (the input's tools)
// run as the run service's client tools. See docs/agui.md.
package aguiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/convo"
	"github.com/trellis-agents/trellis/server/internal/transcript"
	"github.com/trellis-agents/trellis/server/openaiapi"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/server/sse"
	"github.com/trellis-agents/trellis/tool"
)

// Handler serves the AG-UI route.
type Handler struct {
	DB    db.DB
	Runs  *runs.Service
	Saver checkpoint.Saver
	// Enqueue hands a thread to the run queue.
	Enqueue runs.Enqueuer
	// Tenant returns a request's tenant (DefaultTenant when nil).
	Tenant func(r *http.Request) string
	// BodyLimit bounds request bodies (0: wire.DefaultBodyLimit).
	BodyLimit int64
	// Log receives failures (slog.Default() when nil).
	Log *slog.Logger
}

// DefaultTenant is the tenant of requests when Handler.Tenant is nil.
const DefaultTenant = "default"

// OperationID is the route's operation in the route table.
const OperationID = "runAgUI"

// Handlers returns the wire's handler by operation ID.
func (h *Handler) Handlers() map[string]http.Handler {
	return map[string]http.Handler{OperationID: http.HandlerFunc(h.run)}
}

// streamModes are what the wire reads of a run: model chunks, node
// updates (the messages written), the state after each step, the steps
// (runs.ModeSteps: task events without the task's input state, which the
// tasks mode would log once per task) and custom events.
var streamModes = []string{runs.ModeMessages, runs.ModeUpdates, runs.ModeValues, runs.ModeSteps, runs.ModeCustom}

func (h *Handler) tenant(r *http.Request) string {
	if h.Tenant != nil {
		return h.Tenant(r)
	}
	return DefaultTenant
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

// invalid is a 422 naming the field at fault.
func invalid(pointer, format string, args ...any) *wire.Problem {
	return wire.Invalid(wire.FieldError{Pointer: pointer, Detail: fmt.Sprintf(format, args...)})
}

// validID says what is wrong with a client-chosen ID ("" when nothing):
// blank, or breaking the ID rule every wire shares (db.IDProblem), so the
// thread it names is reachable from the LangGraph API's paths.
func validID(id string) string {
	if strings.TrimSpace(id) == "" {
		return "is empty"
	}
	return db.IDProblem(id)
}

// contentText reads a message's content: a string or a list of parts, of
// which text parts are read.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or a list of parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("part %d has type %q; only text parts are read", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// request is a validated input.
type request struct {
	in    RunAgentInput
	turns []convo.Turn // the conversation as the fingerprint reads it
	msgs  []Message    // the messages the turns came from, in step
	fwd   forwarded    // what forwardedProps set
	// fwdResume is forwardedProps.command.resume: the answer to the one
	// interrupt the thread waits on (nil when not given).
	fwdResume *ResumeEntry
}

// validate checks an input and reads its conversation.
func validate(in RunAgentInput) (request, *wire.Problem) {
	rq := request{in: in}
	if p := validID(in.ThreadID); p != "" {
		return rq, invalid("/threadId", "the thread ID %s", p)
	}
	if p := validID(in.RunID); p != "" {
		return rq, invalid("/runId", "the run ID %s", p)
	}
	for i, m := range in.Messages {
		ptr := fmt.Sprintf("/messages/%d", i)
		if m.Role == "activity" {
			continue // the client's view (its content is an object), the answers' included
		}
		text, err := contentText(m.Content)
		if err != nil {
			return rq, invalid(ptr+"/content", "%v", err)
		}
		switch m.Role {
		case "system", "developer", "reasoning", "activity":
			continue // the assistant has its own instructions; the others are the client's views
		case "user":
			rq.turns = append(rq.turns, turnOf("user", text, nil))
		case "assistant":
			var calls []string
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID)
			}
			rq.turns = append(rq.turns, turnOf("assistant", text, calls))
		case "tool":
			if m.ToolCallID == "" {
				return rq, invalid(ptr+"/toolCallId", "a tool message must name the call it answers")
			}
			rq.turns = append(rq.turns, turnOf("tool", text, []string{m.ToolCallID}))
		default:
			return rq, invalid(ptr+"/role", "unknown role %q; the roles are user, assistant, tool, system, developer, reasoning and activity", m.Role)
		}
		rq.msgs = append(rq.msgs, m)
	}
	for i, e := range in.Resume {
		if e.Status != "resolved" && e.Status != "cancelled" {
			return rq, invalid(fmt.Sprintf("/resume/%d/status", i), "must be resolved or cancelled, got %q", e.Status)
		}
	}
	entries := make([]tool.ContextEntry, len(in.Context))
	for i, e := range in.Context {
		entries[i] = tool.ContextEntry{Description: e.Description, Value: e.Value}
	}
	if err := tool.CheckClientContext(entries); err != nil {
		return rq, invalid("/context", "%v", err)
	}
	var err error
	if rq.fwd, rq.fwdResume, err = readForwarded(in.ForwardedProps); err != nil {
		return rq, invalid("/forwardedProps", "%v", err)
	}
	if rq.fwdResume != nil && len(in.Resume) > 0 {
		return rq, invalid("/forwardedProps/command/resume", "the input answers with both resume entries and forwardedProps.command.resume; give the answers one way (resume entries, keyed by interrupt ID)")
	}
	specs := make([]llm.ToolSpec, len(in.Tools))
	for i, t := range in.Tools {
		specs[i] = llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	if err := tool.CheckClientTools(specs); err != nil {
		return rq, invalid("/tools", "%v", err)
	}
	return rq, nil
}

func clientSpecs(ts []Tool) []runs.ClientTool {
	out := make([]runs.ClientTool, len(ts))
	for i, t := range ts {
		out[i] = runs.ClientTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return out
}

// run serves POST /ag-ui/{assistant}.
func (h *Handler) run(w http.ResponseWriter, r *http.Request) {
	in, p := wire.Decode[RunAgentInput](r, h.BodyLimit)
	if p != nil {
		p.Write(w, r)
		return
	}
	rq, p := validate(in)
	if p != nil {
		p.Write(w, r)
		return
	}
	ctx, tenant := r.Context(), h.tenant(r)
	a, err := h.assistant(ctx, tenant, r.PathValue("assistant"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	th, err := h.DB.GetThread(ctx, tenant, in.ThreadID)
	exists := err == nil
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		h.fail(w, r, err)
		return
	}
	var turns []string
	var at map[string]any
	if exists {
		turns, at = convo.Recorded(th)
	}
	kw, p := h.plan(rq, th, exists, turns)
	if p != nil {
		p.Write(w, r)
		return
	}
	kw.ClientTools = clientSpecs(in.Tools)
	md := db.Metadata{"source": "ag-ui", "ag_ui_run_id": in.RunID}
	run, err := h.Runs.Create(ctx, h.Enqueue, runs.CreateRequest{
		Tenant: tenant, ThreadID: in.ThreadID, AssistantID: a.ID, Kwargs: kw, Metadata: md,
		MultitaskStrategy: runs.Reject, CreateThread: true,
	})
	if err != nil && run.ID == "" {
		h.fail(w, r, err)
		return
	}
	h.stream(w, r, rq, run, turns, at)
}

// plan maps the input onto a run: resume entries and tool messages that
// answer what the thread waits for become the command's resume; otherwise
// the messages the thread has not seen are the input.
func (h *Handler) plan(rq request, th db.Thread, exists bool, turns []string) (runs.Kwargs, *wire.Problem) {
	kw := runs.Kwargs{StreamMode: streamModes}
	runSettings(&kw, rq.fwd, rq.in.Context)
	var waiting []openaiapi.Waiting
	if exists && th.Status == db.ThreadInterrupted {
		waiting = openaiapi.WaitingFrom(th.Interrupts)
	}
	byID := map[string]openaiapi.Waiting{}
	calls := map[string]string{} // client tool call ID → interrupt ID
	for _, wt := range waiting {
		byID[wt.ID] = wt
		if c, ok := clientCall(wt); ok {
			calls[c.CallID] = wt.ID
		}
	}
	resume := map[string]json.RawMessage{}
	if rq.fwdResume != nil {
		var asked []openaiapi.Waiting
		for _, wt := range waiting {
			if _, ok := clientCall(wt); !ok {
				asked = append(asked, wt)
			}
		}
		switch len(asked) {
		case 0:
			return kw, &wire.Problem{Status: http.StatusConflict, Detail: fmt.Sprintf("thread %s waits for no person's answer, so forwardedProps.command.resume answers nothing; send the input without it", rq.in.ThreadID),
				Errors: []wire.FieldError{{Pointer: "/forwardedProps/command/resume", Detail: "the thread waits for no answer"}}}
		case 1:
			resume[asked[0].ID] = rq.fwdResume.Payload
		default:
			return kw, invalid("/forwardedProps/command/resume", "thread %s waits on %d interrupts (%s); forwardedProps.command.resume answers only one: use resume entries keyed by interrupt ID", rq.in.ThreadID, len(asked), idList(asked))
		}
	}
	for i, e := range rq.in.Resume {
		ptr := fmt.Sprintf("/resume/%d", i)
		wt, ok := byID[e.InterruptID]
		if !ok {
			if len(waiting) == 0 {
				return kw, &wire.Problem{Status: http.StatusConflict, Detail: fmt.Sprintf("thread %s is not waiting for an answer (resume entry %d answers interrupt %q); send the input without resume", rq.in.ThreadID, i, e.InterruptID),
					Errors: []wire.FieldError{{Pointer: ptr + "/interruptId", Detail: "the thread waits for nothing"}}}
			}
			return kw, invalid(ptr+"/interruptId", "thread %s does not wait on interrupt %q (it waits on %s)", rq.in.ThreadID, e.InterruptID, idList(waiting))
		}
		v, p := answerOf(wt, e, ptr)
		if p != nil {
			return kw, p
		}
		resume[wt.ID] = v
	}
	unseen := convo.Unseen(turns, exists, rq.turns)
	newMsgs := rq.msgs[len(rq.msgs)-len(unseen):]
	var input []map[string]any
	for i, m := range newMsgs {
		ptr := fmt.Sprintf("/messages/%d", len(rq.in.Messages)-len(newMsgs)+i)
		switch m.Role {
		case "tool":
			id, ok := calls[m.ToolCallID]
			if !ok {
				if exists && strings.Contains(string(th.Values), `"tool_call_id":`+string(mustJSON(m.ToolCallID))) {
					continue // a result the thread already has (the client resent it)
				}
				return kw, invalid(ptr+"/toolCallId", "no frontend tool call %q waits for a result on thread %s", m.ToolCallID, rq.in.ThreadID)
			}
			text, _ := contentText(m.Content)
			resume[id] = mustJSON(tool.ClientResult{Content: text, Error: m.Error})
		default:
			text, _ := contentText(m.Content)
			input = append(input, map[string]any{"role": m.Role, "content": text})
		}
	}
	switch {
	case len(resume) > 0:
		var missing []string
		for _, wt := range waiting {
			if _, ok := resume[wt.ID]; !ok {
				missing = append(missing, wt.ID)
			}
		}
		if len(missing) > 0 {
			return kw, invalid("/resume", "the thread also waits on %s: answer every waiting interrupt (resume entries) and frontend tool call (tool messages) in one input", strings.Join(missing, ", "))
		}
		if len(input) > 0 {
			return kw, invalid("/messages", "the input answers the thread's waiting interrupts and also adds %d new message(s); send the answers first and the new message with the next input, once this run ends", len(input))
		}
		kw.Command = &runs.Command{Resume: mustJSON(resume)}
	case len(waiting) > 0:
		return kw, &wire.Problem{Status: http.StatusConflict, Detail: fmt.Sprintf(
			"thread %s waits on %s: answer them with resume entries (interrupts) or tool messages (frontend tool calls) before sending new messages", rq.in.ThreadID, idList(waiting))}
	case len(input) == 0:
		return kw, invalid("/messages", "there is nothing new for thread %s: messages must end with a message the thread has not seen (a user message)", rq.in.ThreadID)
	default:
		kw.Input = mustJSON(map[string]any{"messages": input})
	}
	return kw, nil
}

// clientCall reads a frontend tool call's interrupt.
func clientCall(wt openaiapi.Waiting) (tool.ClientCall, bool) {
	var c tool.ClientCall
	if json.Unmarshal(wt.Value, &c) != nil || c.Kind != tool.ClientCallKind {
		return c, false
	}
	return c, true
}

// answerOf is the resume value of a resume entry: its payload, or for a
// cancelled entry the refusal the interrupt's kind understands.
func answerOf(wt openaiapi.Waiting, e ResumeEntry, ptr string) (json.RawMessage, *wire.Problem) {
	if e.Status == "resolved" {
		if len(e.Payload) == 0 {
			return nil, invalid(ptr+"/payload", "a resolved entry needs the answer as its payload (interrupt %s's schema: %s)", wt.ID, orNone(wt.Schema))
		}
		return e.Payload, nil
	}
	if _, ok := clientCall(wt); ok {
		return mustJSON(tool.ClientResult{Error: "the client cancelled this call"}), nil
	}
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(wt.Value, &k)
	if k.Kind == tool.ApprovalKind {
		return mustJSON(tool.Reject("cancelled by the client")), nil
	}
	return nil, invalid(ptr+"/status", "interrupt %s (%s) cannot be cancelled; answer it (status resolved, payload per its schema: %s)", wt.ID, orNone(json.RawMessage(k.Kind)), orNone(wt.Schema))
}

func orNone(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "none"
	}
	return string(raw)
}

func idList(ws []openaiapi.Waiting) string {
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return strings.Join(ids, ", ")
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// assistant resolves the path's assistant: an ID, a graph ID (its first
// assistant) or an assistant's name.
func (h *Handler) assistant(ctx context.Context, tenant, name string) (db.Assistant, error) {
	a, err := db.FindAssistant(ctx, h.DB, tenant, name)
	if errors.Is(err, db.ErrNotFound) {
		return db.Assistant{}, wire.NotFound("assistant", name)
	}
	return a, err
}

// fail answers err: problems as they are, the run service's refusals as
// 4xx, the rest as 500.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var p *wire.Problem
	var ie *runs.InputError
	switch {
	case errors.As(err, &p):
		p.Write(w, r)
	case errors.As(err, &ie):
		ptr := ie.Pointer
		if ptr == "/client_tools" {
			ptr = "/tools"
		}
		wire.Invalid(wire.FieldError{Pointer: ptr, Detail: ie.Detail}).Write(w, r)
	case errors.Is(err, runs.ErrThreadBusy):
		wire.Conflict("the thread has a run in progress; retry when it ends").Write(w, r)
	case errors.Is(err, db.ErrNotFound):
		wire.NewProblem(http.StatusNotFound, err.Error()).Write(w, r)
	default:
		h.log().Error("ag-ui request failed", "path", r.URL.Path, "err", err)
		if sp := wire.StorageProblem(err); sp != nil {
			sp.Write(w, r) // 507 or 503: the database's storage failed
			return
		}
		wire.NewProblem(http.StatusInternalServerError, "the server failed: "+err.Error()).Write(w, r)
	}
}

// serverError is the RUN_ERROR for a failure of the server while a run
// streams: a storage failure of the database says so (code storage_full
// or database_unavailable) without the server's paths; anything else is
// a server_error with what was being done.
func (h *Handler) serverError(doing string, err error) Event {
	h.log().Error("ag-ui stream failed", "doing", doing, "err", err)
	if se, ok := db.AsStorage(err); ok {
		code := "database_unavailable"
		if errors.Is(se.Kind, db.ErrStorageFull) {
			code = "storage_full"
		}
		return Event{Type: RunError, Message: se.Advice(), Code: code}
	}
	return Event{Type: RunError, Message: "the server failed to " + doing + ": " + err.Error(), Code: "server_error"}
}

// stream answers the run's events as AG-UI events.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, rq request, run db.Run, turns []string, at map[string]any) {
	ctx, tenant := r.Context(), h.tenant(r)
	sw, err := sse.NewWriter(w, r, sse.Options{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer sw.Close()
	s := sender{sw}
	s.send(Event{Type: RunStarted, ThreadID: rq.in.ThreadID, RunID: rq.in.RunID, ProtocolVersion: ProtocolVersion,
		Metadata: map[string]any{"trellis": map[string]any{"run_id": run.ID}}})
	for _, ev := range h.answers(ctx, tenant, run) {
		s.send(ev)
	}
	tr := newTranslator(s.send)
	if err := h.follow(ctx, tenant, run, tr); err != nil {
		if ctx.Err() == nil {
			tr.finish()
			s.send(h.serverError("read the run", err))
		}
		return
	}
	tr.finish()
	if tr.runErr != nil {
		s.send(*tr.runErr)
		return
	}
	th, err := h.DB.GetThread(ctx, tenant, run.ThreadID)
	if err != nil {
		s.send(h.serverError("read the thread", err))
		return
	}
	if !tr.snapshot && len(th.Values) > 0 {
		s.send(Event{Type: StateSnapshot, Snapshot: th.Values})
	}
	outcome := &Outcome{Type: "success"}
	if th.Status == db.ThreadInterrupted {
		for _, wt := range openaiapi.WaitingFrom(th.Interrupts) {
			if c, ok := clientCall(wt); ok {
				tr.pendingCall(c.CallID, c.Tool, c.Arguments)
				outcome.PendingToolCallIDs = append(outcome.PendingToolCallIDs, c.CallID)
				continue
			}
			outcome.Interrupts = append(outcome.Interrupts, interruptOf(wt))
		}
		if len(outcome.Interrupts) > 0 {
			outcome.Type = "interrupt"
		}
	} else if done, err := h.DB.GetRun(ctx, tenant, run.ThreadID, run.ID); err == nil && done.Status == db.RunInterrupted {
		outcome.Type = "cancelled" // stopped by a cancel or a double-text, and waiting for nothing
	}
	history := append(append([]convo.Turn{}, rq.turns...), tr.turns()...)
	if len(history) > 0 {
		if _, err := convo.Remember(context.WithoutCancel(ctx), h.DB, h.Saver, tenant, run.ThreadID, turns, at, history, th.Status != db.ThreadInterrupted); err != nil {
			h.log().Warn("ag-ui wire: the conversation's fingerprint was not recorded", "thread", run.ThreadID, "err", err)
		}
	}
	s.send(Event{Type: RunFinished, ThreadID: rq.in.ThreadID, RunID: rq.in.RunID, Outcome: outcome})
}

// answers are the activity snapshots of the answers run goes on with,
// read as the thread's transcript reads them (server/internal/transcript,
// as the LangGraph API's transcript and the OpenAI wire's history do), so
// the client's history holds each answer where it was given. A failure to
// read them is logged, and the run is streamed without them.
func (h *Handler) answers(ctx context.Context, tenant string, run db.Run) []Event {
	turns, err := transcript.Answers(ctx, h.DB, tenant, run.ThreadID, run.ID)
	if err != nil {
		h.log().Warn("ag-ui wire: the run's answers were not read", "thread", run.ThreadID, "err", err)
		return nil
	}
	var out []Event
	for i, t := range turns {
		id := "answer-" + t.InterruptID
		if t.InterruptID == "" {
			id = fmt.Sprintf("answer-%s-%d", run.ID, i)
		}
		content := map[string]any{"text": t.Text, "outcome": t.Outcome, "interruptId": t.InterruptID, "answer": t.Answer}
		if len(t.Asked) > 0 {
			content["asked"] = t.Asked
		}
		out = append(out, Event{Type: ActivitySnapshot, MessageID: id, ActivityType: AnswerActivity, Content: content})
	}
	return out
}

// interruptOf presents a waiting interrupt as AG-UI's: its kind as the
// reason, the OpenAI wire's readable text as the message, its answer
// schema, and the structured interaction under metadata.trellis.
func interruptOf(wt openaiapi.Waiting) WaitingInterrupt {
	text, ia := openaiapi.Describe(wt)
	in := WaitingInterrupt{ID: wt.ID, Reason: ia.Kind, Message: text, Metadata: map[string]any{"trellis": ia}}
	if len(wt.Schema) > 0 && bytes.HasPrefix(bytes.TrimSpace(wt.Schema), []byte("{")) {
		in.ResponseSchema = wt.Schema
	}
	var call struct {
		CallID string `json:"call_id"`
	}
	if json.Unmarshal(wt.Value, &call) == nil && call.CallID != "" {
		in.ToolCallID = call.CallID
	}
	return in
}

// follow reads the run's events until it ends, handing them to tr.
func (h *Handler) follow(ctx context.Context, tenant string, run db.Run, tr *translator) error {
	_, err := runs.Follow(ctx, h.DB, h.Runs.Broker(), tenant, run.ThreadID, run.ID, 0, runs.DefaultFollowPoll,
		func(ev db.Event) error { tr.add(ev); return nil })
	return err
}

// sender writes AG-UI events as "data: {json}" server-sent events over
// the service's SSE writer (heartbeat comments while the run is quiet,
// which AG-UI clients skip; a write deadline per event).
type sender struct{ w *sse.Writer }

func (s sender) send(ev Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	_ = s.w.Send(sse.Event{Data: b}) // a client gone is seen by the request's context
}
