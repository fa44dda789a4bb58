package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/limit"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool"
)

// streamModes are what the wire reads of a run: model chunks (answer and
// reasoning), node updates (the messages written, the interrupts) and
// custom events (progress), subgraphs included for the progress.
var streamModes = []string{runs.ModeMessages, runs.ModeUpdates, runs.ModeCustom}

// chatTurn is a request after validation.
type chatTurn struct {
	req       ChatRequest
	msgs      []turn
	assistant db.Assistant
	explicit  string
	// results are the trailing tool messages: client tool results that
	// answer the calls the thread waits on.
	results []toolResult
}

// toolResult is a tool message of a request.
type toolResult struct {
	index  int
	callID string
	text   string
}

// validate checks a request and reads its conversation.
func (h *Handler) validate(r *http.Request, req ChatRequest) (chatTurn, *apiError) {
	ct := chatTurn{req: req}
	if strings.TrimSpace(req.Model) == "" {
		return ct, badRequest("model", "model is empty: name an assistant or a graph (GET /v1/models lists them)")
	}
	if req.N != nil && *req.N != 1 {
		return ct, badRequest("n", "n must be 1: an agent run has one outcome")
	}
	if len(req.Messages) == 0 {
		return ct, badRequest("messages", "messages is empty: send the conversation, the new user message last")
	}
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer":
			continue // the assistant's own instructions apply; not part of the thread
		case "user", "assistant":
			ct.results = nil // only the tool messages after the last turn answer anything
		case "tool":
			if m.ToolCallID == "" {
				return ct, badRequest(param+".tool_call_id", "messages[%d] is a tool result without tool_call_id; name the call it answers", i)
			}
			text, err := contentText(m.Content)
			if err != nil {
				return ct, badRequest(param+".content", "messages[%d].content: %v", i, err)
			}
			ct.results = append(ct.results, toolResult{index: i, callID: m.ToolCallID, text: text})
			continue // not part of the fingerprint: the thread records results itself
		case "function":
			return ct, badRequest(param+".role", "messages[%d] has the deprecated role function; send client tool results as role tool with tool_call_id", i)
		default:
			return ct, badRequest(param+".role", "messages[%d] has role %q; the roles are system, developer, user, assistant and tool", i, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return ct, badRequest(param+".content", "messages[%d].content: %v", i, err)
		}
		ct.msgs = append(ct.msgs, turn{Role: m.Role, Text: text})
	}
	if len(ct.results) == 0 && (len(ct.msgs) == 0 || ct.msgs[len(ct.msgs)-1].Role != "user") {
		return ct, badRequest("messages", "the last message must be the user's new message (role user), or tool results (role tool) answering the reply's tool_calls")
	}
	for i, td := range req.Tools {
		if td.Type != "function" {
			return ct, badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d] has type %q; only function tools are supported", i, td.Type)
		}
	}
	ct.explicit = r.Header.Get(HeaderThread)
	if id := req.Metadata["thread_id"]; id != "" {
		if ct.explicit != "" && ct.explicit != id {
			return ct, badRequest("metadata.thread_id", "metadata.thread_id %q and the %s header %q name different threads", id, HeaderThread, ct.explicit)
		}
		ct.explicit = id
	}
	if p := validID(ct.explicit); p != "" {
		return ct, badRequest("metadata.thread_id", "the thread ID %s", p)
	}
	return ct, nil
}

// validID says what is wrong with a thread ID ("" when it is fine, or
// when none is given): the ID rule every wire shares (db.IDProblem).
func validID(id string) string {
	if id == "" {
		return ""
	}
	return db.IDProblem(id)
}

// contentText reads a message's content: a string, null, or text parts.
func contentText(c any) (string, error) {
	switch v := c.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any:
		var b strings.Builder
		for i, p := range v {
			part, ok := p.(map[string]any)
			if !ok {
				return "", fmt.Errorf("part %d is not an object", i)
			}
			if part["type"] != "text" {
				return "", fmt.Errorf("part %d has type %v; only text parts are read", i, part["type"])
			}
			s, _ := part["text"].(string)
			b.WriteString(s)
		}
		return b.String(), nil
	}
	return "", errors.New("must be a string or a list of text parts")
}

// outcome is what a turn produced.
type outcome struct {
	run       db.Run
	ext       Extension
	content   string
	reasoning string
	usage     *ChatUsage
	runErr    string
	// toolCalls are the client tool calls the run waits on.
	toolCalls []ChatToolCall
}

// chat serves POST /v1/chat/completions.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	req, p := wire.Decode[ChatRequest](r, h.BodyLimit)
	if p != nil {
		fromProblem(p).write(w)
		return
	}
	ct, e := h.validate(r, req)
	if e != nil {
		e.write(w)
		return
	}
	if req.Stream {
		// The stream counts against limits.max_streams: refuse it before
		// a run starts, in OpenAI's error shape.
		if ok, detail := limit.Take(r); !ok {
			w.Header().Set("Retry-After", "1")
			(&apiError{status: http.StatusTooManyRequests, typ: "rate_limit_exceeded", code: "too_many_streams", msg: detail}).write(w)
			return
		}
	}
	ctx, tenant := r.Context(), h.tenant(r)
	a, err := h.assistant(ctx, tenant, req.Model)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ct.assistant = a
	lookup := ct.msgs
	if len(ct.results) > 0 {
		// The history ends with the reply that made the calls: look it
		// up as a turn the results follow.
		lookup = append(slices.Clone(ct.msgs), turn{Role: "tool"})
	}
	tg, err := h.resolve(ctx, tenant, ct.explicit, lookup)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var waiting []pending
	if tg.Exists && tg.Thread.Status == db.ThreadInterrupted && tg.ForkOf == "" {
		waiting = pendingFrom(tg.Thread.Interrupts)
	}
	kw := runs.Kwargs{StreamMode: streamModes, StreamSubgraphs: true, ClientTools: clientTools(req.Tools)}
	var answered *pending
	calls, others := splitCalls(waiting)
	switch {
	case len(ct.results) > 0:
		// A thread may wait on client tool calls and a person at once
		// (one reply called a client tool and a tool needing approval):
		// the tool results resume the calls, and a structured answer in
		// the same request (trellis.answer) the person's interaction; the
		// run goes on with what was answered, and what was not (the
		// person's, answered by a later message) still waits.
		resume, e := answerCalls(ct.results, calls, tg.ThreadID)
		if e != nil {
			e.write(w)
			return
		}
		if req.Trellis != nil && len(req.Trellis.Answer) > 0 {
			p, e := pick(others, req.Trellis.InterruptID, tg.ThreadID)
			if e != nil {
				e.write(w)
				return
			}
			answered = p
			var m map[string]json.RawMessage
			_ = json.Unmarshal(resume, &m)
			m[p.ID] = req.Trellis.Answer
			resume = mustJSON(m)
		}
		kw.Command = &runs.Command{Resume: resume}
	case len(calls) > 0:
		ids := make([]string, len(calls))
		for i, c := range calls {
			ids[i] = c.call.CallID
		}
		badRequest("messages", "thread %s waits for the results of the tool calls %s: answer each with a tool message (role tool, tool_call_id) after the assistant message that made them", tg.ThreadID, strings.Join(ids, ", ")).write(w)
		return
	case req.Trellis != nil && len(req.Trellis.Answer) > 0:
		p, e := pick(others, req.Trellis.InterruptID, tg.ThreadID)
		if e != nil {
			e.write(w)
			return
		}
		answered = p
		kw.Command = &runs.Command{Resume: mustJSON(map[string]json.RawMessage{p.ID: req.Trellis.Answer})}
	case len(others) > 0:
		p := &others[0]
		value, probs := parseAnswer(*p, ct.msgs[len(ct.msgs)-1].Text)
		if len(probs) > 0 {
			h.reask(w, r, ct, tg, *p, probs)
			return
		}
		answered = p
		kw.Command = &runs.Command{Resume: mustJSON(map[string]json.RawMessage{p.ID: value})}
	default:
		kw.Input = inputOf(tg.Unseen)
	}
	if tg.ForkOf != "" {
		if err := h.fork(ctx, tenant, &tg); err != nil {
			h.fail(w, r, err)
			return
		}
		kw.CheckpointID = tg.ForkCheckpoint
	}
	md := db.Metadata{"source": "openai"}
	if req.User != "" {
		md["user"] = req.User
	}
	run, err := h.Runs.Create(ctx, h.Enqueue, runs.CreateRequest{
		Tenant: tenant, ThreadID: tg.ThreadID, AssistantID: a.ID, Kwargs: kw, Metadata: md,
		MultitaskStrategy: runs.Reject, CreateThread: true,
	})
	if err != nil && run.ID == "" {
		var ie *runs.InputError
		if answered != nil && errors.As(err, &ie) {
			h.reask(w, r, ct, tg, *answered, []string{ie.Detail})
			return
		}
		h.fail(w, r, err)
		return
	}
	if req.Stream {
		h.stream(w, r, ct, tg, run)
		return
	}
	out, err := h.follow(ctx, tenant, run, func(Delta, *ProgressEvent) {})
	if err != nil {
		if ctx.Err() != nil {
			return // the client left; the run goes on and the thread keeps it
		}
		h.fail(w, r, err)
		return
	}
	if out.runErr != "" {
		(&apiError{status: http.StatusInternalServerError, typ: "server_error", code: "run_failed",
			msg: fmt.Sprintf("the run %s on thread %s failed: %s", run.ID, tg.ThreadID, out.runErr)}).write(w)
		return
	}
	h.finish(ctx, tenant, ct, tg, &out)
	setHeaders(w, tg.ThreadID, out.ext.Status)
	finish := "stop"
	if len(out.toolCalls) > 0 {
		finish = "tool_calls"
		for i := range out.toolCalls {
			out.toolCalls[i].Index = nil // chunks number their calls; a message does not
		}
	}
	writeJSON(w, ChatCompletion{
		ID: "chatcmpl-" + run.ID, Object: "chat.completion", Created: run.CreatedAt.Unix(), Model: req.Model,
		Choices: []ChatChoice{{Message: ReplyMessage{Role: "assistant", Content: out.content, ReasoningContent: out.reasoning, ToolCalls: out.toolCalls}, FinishReason: finish}},
		Usage:   out.usage, Trellis: &out.ext,
	})
}

// pick finds the interaction a structured answer answers.
func pick(waiting []pending, id, thread string) (*pending, *apiError) {
	if len(waiting) == 0 {
		return nil, &apiError{status: http.StatusConflict, typ: "invalid_request_error", param: "trellis.answer", code: "thread_not_waiting",
			msg: fmt.Sprintf("thread %s is not waiting for an answer; send the message without trellis.answer", thread)}
	}
	if id == "" {
		return &waiting[0], nil
	}
	for i := range waiting {
		if waiting[i].ID == id {
			return &waiting[i], nil
		}
	}
	return nil, badRequest("trellis.interrupt_id", "thread %s does not wait on interrupt %q", thread, id)
}

// inputOf is the run's input: the messages the thread has not seen.
func inputOf(msgs []turn) json.RawMessage {
	list := make([]map[string]string, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]string{"role": m.Role, "content": m.Text}
	}
	return mustJSON(map[string]any{"messages": list})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// fail answers err: the wire's own errors as they are, the run service's
// refusals as 4xx, the rest as 500.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var ie *runs.InputError
	switch {
	case errors.As(err, &ae):
		ae.write(w)
	case errors.As(err, &ie) && ie.Pointer == "/client_tools":
		badRequest("tools", "%s", ie.Detail).write(w)
	case errors.As(err, &ie):
		badRequest("messages", "the assistant refused the turn: %s", ie.Detail).write(w)
	case errors.Is(err, runs.ErrThreadBusy):
		(&apiError{status: http.StatusConflict, typ: "invalid_request_error", code: "thread_busy",
			msg: "the conversation's thread has a run in progress; retry when it ends"}).write(w)
	case errors.Is(err, db.ErrNotFound):
		(&apiError{status: http.StatusNotFound, typ: "invalid_request_error", msg: err.Error()}).write(w)
	case errors.Is(err, db.ErrInvalid):
		badRequest("", "%v", err).write(w)
	default:
		h.internal(r, err).write(w)
	}
}

// follow reads the run's events until it ends, handing deltas to emit,
// and returns what it produced.
func (h *Handler) follow(ctx context.Context, tenant string, run db.Run, emit func(Delta, *ProgressEvent)) (outcome, error) {
	tr := newTranslator(emit)
	if _, err := runs.Follow(ctx, h.DB, h.Runs.Broker(), tenant, run.ThreadID, run.ID, 0, runs.DefaultFollowPoll,
		func(ev db.Event) error { tr.add(ev); return nil }); err != nil {
		return outcome{}, err
	}
	done, err := h.DB.GetRun(ctx, tenant, run.ThreadID, run.ID)
	if err != nil {
		return outcome{}, err
	}
	out := outcome{run: done, content: tr.content.String(), reasoning: tr.reason.String(), runErr: tr.runErr,
		ext: Extension{ThreadID: run.ThreadID, RunID: run.ID, Status: "done", Events: tr.events}}
	if done.Status == db.RunError || done.Status == db.RunTimeout {
		if out.runErr == "" {
			out.runErr = cmpOr(done.Error, string(done.Status))
		}
	}
	out.usage = usageOf(done.Usage)
	if th, err := h.DB.GetThread(ctx, tenant, run.ThreadID); err == nil && th.Status == db.ThreadInterrupted {
		if ps := pendingFrom(th.Interrupts); len(ps) > 0 {
			tr.waiting = ps
		}
	} else if err == nil {
		tr.waiting = nil
	}
	calls, others := splitCalls(tr.waiting)
	for i, c := range calls {
		out.toolCalls = append(out.toolCalls, ChatToolCall{Index: &i, ID: c.call.CallID, Type: "function", Function: ChatFunctionCall{Name: c.call.Tool, Arguments: c.call.Arguments}})
	}
	tr.waiting = others
	if len(calls) > 0 && len(others) == 0 {
		out.ext.Status = "tool_calls"
	}
	if len(tr.waiting) > 0 {
		text, ia := describe(tr.waiting[0])
		ia.Others = len(tr.waiting) - 1
		out.ext.Status, out.ext.Interaction = "waiting", ia
		if out.content != "" {
			text = "\n\n" + text
		}
		out.content += text
		emit(Delta{Content: text}, nil)
	}
	return out, nil
}

// finish records the answered history on the thread, so the next request
// of the conversation continues it. A failure is logged: the answer is
// still good, and the next request falls back to a new thread.
func (h *Handler) finish(ctx context.Context, tenant string, ct chatTurn, tg target, out *outcome) {
	history := append(append([]turn{}, ct.msgs...), turn{Role: "assistant", Text: out.content})
	if err := h.remember(context.WithoutCancel(ctx), tenant, tg, history, out.ext.Status == "done"); err != nil {
		h.log().Warn("openai wire: the conversation's fingerprint was not recorded", "thread", tg.ThreadID, "err", err)
	}
}

// reask answers a turn whose answer does not fit the waiting interaction:
// nothing runs, the thread keeps waiting, and the reply asks again saying
// what was wrong.
func (h *Handler) reask(w http.ResponseWriter, r *http.Request, ct chatTurn, tg target, p pending, probs []string) {
	text, ia := describe(p)
	ia.Problems = append(probs, ia.Problems...)
	text = fmt.Sprintf("That answer did not fit: %s\n\n%s", strings.Join(probs, "; "), text)
	out := outcome{content: text, ext: Extension{ThreadID: tg.ThreadID, Status: "reasked", Interaction: ia}}
	h.finish(r.Context(), h.tenant(r), ct, tg, &out)
	setHeaders(w, tg.ThreadID, out.ext.Status)
	id := "chatcmpl-" + checkpoint.NewID()
	now := time.Now().Unix()
	if !ct.req.Stream {
		writeJSON(w, ChatCompletion{ID: id, Object: "chat.completion", Created: now, Model: ct.req.Model,
			Choices: []ChatChoice{{Message: ReplyMessage{Role: "assistant", Content: text}, FinishReason: "stop"}},
			Usage:   &ChatUsage{}, Trellis: &out.ext})
		return
	}
	sw := newSSE(w, id, ct.req.Model, now)
	sw.chunk(Delta{Role: "assistant", Content: text}, nil, &Extension{ThreadID: tg.ThreadID})
	sw.end(&out.ext, ct.req.StreamOptions != nil && ct.req.StreamOptions.IncludeUsage, &ChatUsage{})
}

func usageOf(raw json.RawMessage) *ChatUsage {
	u := &ChatUsage{}
	var g runs.RunUsage
	if len(raw) > 0 && json.Unmarshal(raw, &g) == nil {
		u.PromptTokens, u.CompletionTokens = g.InputTokens, g.OutputTokens
		u.TotalTokens = g.InputTokens + g.OutputTokens
	}
	return u
}

func setHeaders(w http.ResponseWriter, thread, status string) {
	w.Header().Set(HeaderThread, thread)
	w.Header().Set(HeaderStatus, status)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// clientTools are the request's tools as the run's client tools.
func clientTools(defs []ChatTool) []runs.ClientTool {
	out := make([]runs.ClientTool, len(defs))
	for i, d := range defs {
		out[i] = runs.ClientTool{Name: d.Function.Name, Description: d.Function.Description, Parameters: d.Function.Parameters}
	}
	return out
}

// waitingCall is a client tool call the thread waits on.
type waitingCall struct {
	id   string // the interrupt's
	call tool.ClientCall
}

// splitCalls separates the client tool calls a thread waits on from the
// interactions that wait for a person.
func splitCalls(ws []pending) ([]waitingCall, []pending) {
	var calls []waitingCall
	var others []pending
	for _, p := range ws {
		var c tool.ClientCall
		if json.Unmarshal(p.Value, &c) == nil && c.Kind == tool.ClientCallKind {
			calls = append(calls, waitingCall{id: p.ID, call: c})
			continue
		}
		others = append(others, p)
	}
	return calls, others
}

// answerCalls maps tool messages onto the calls they answer: the resume
// of the run that goes on. Every call must be answered, and every result
// must answer a call.
func answerCalls(results []toolResult, calls []waitingCall, thread string) (json.RawMessage, *apiError) {
	if len(calls) == 0 {
		return nil, &apiError{status: http.StatusConflict, typ: "invalid_request_error", param: "messages", code: "thread_not_waiting",
			msg: fmt.Sprintf("thread %s waits for no tool results; send the conversation with a new user message last", thread)}
	}
	resume := map[string]tool.ClientResult{}
	byCall := map[string]string{}
	for _, c := range calls {
		byCall[c.call.CallID] = c.id
	}
	for _, r := range results {
		id, ok := byCall[r.callID]
		if !ok {
			return nil, badRequest(fmt.Sprintf("messages[%d].tool_call_id", r.index), "thread %s waits for no tool call %q (it waits for %s)", thread, r.callID, callIDs(calls))
		}
		resume[id] = tool.ClientResult{Content: r.text}
	}
	if len(resume) < len(calls) {
		return nil, badRequest("messages", "thread %s waits for the results of %s; answer every call with a tool message", thread, callIDs(calls))
	}
	return mustJSON(resume), nil
}

func callIDs(calls []waitingCall) string {
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.call.CallID
	}
	return strings.Join(ids, ", ")
}
