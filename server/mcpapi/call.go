package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// The status of a tool result (its structured content's "status").
const (
	StatusDone    = "done"
	StatusWaiting = "waiting"
)

// codeInvalidParams is JSON-RPC's invalid-params error code, which MCP
// uses for an unknown tool.
const codeInvalidParams = -32602

// streamModes are what a call reads of its run: node updates (the
// messages written, the steps taken, the interrupts) and custom events,
// subgraphs included, for the progress.
var streamModes = []string{runs.ModeUpdates, runs.ModeCustom}

// Result is a tool result's structured content.
type Result struct {
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id,omitempty"`
	// Status is StatusDone or StatusWaiting.
	Status string `json:"status"`
	// Answer is a chat assistant's final answer: the AI messages the run
	// added to the thread.
	Answer string `json:"answer,omitempty"`
	// Values is the thread's state after the run (graphs that are not
	// chats).
	Values json.RawMessage `json:"values,omitempty"`
	// Question is what a waiting run asks.
	Question *Question `json:"question,omitempty"`
}

// Question is what a waiting thread asks: answer it by calling the tool
// again with thread_id and answer.
type Question struct {
	// InterruptID is the interrupt the answer resumes.
	InterruptID string `json:"interrupt_id"`
	// Text is the question as readable text.
	Text string `json:"text"`
	// Schema is the JSON Schema of the answers that fit (when the graph
	// gave one).
	Schema json.RawMessage `json:"schema,omitempty"`
	// Payload is the interrupt's value as the graph raised it.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Elicitation says how asking through MCP elicitation went: "declined"
	// or "cancelled" by the person, "unsupported" by the client, "failed",
	// or "" when it was not tried.
	Elicitation string `json:"elicitation,omitempty"`
}

// toolError is a tool result with isError set: the model (or person)
// calling the tool reads it and can correct the call.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// call is one tools/call after its arguments were read.
type call struct {
	tenant  string
	entry   entry
	thread  string
	input   json.RawMessage // the run's input (nil when answering)
	answer  json.RawMessage // the answer to the waiting question (nil when not)
	session *mcp.ServerSession
	token   any // the progress token, nil when none
	sent    float64
}

// callTool answers tools/call: it runs the assistant, asking through
// elicitation when the run waits for a person and the client can.
func (h *Handler) callTool(ctx context.Context, tenant string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	es, err := h.tools(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("listing the assistants failed: %w", err)
	}
	c := &call{tenant: tenant, session: req.Session, token: req.Params.GetProgressToken()}
	found := false
	for _, e := range es {
		if e.tool.Name == req.Params.Name {
			c.entry, found = e, true
			break
		}
	}
	if !found {
		return nil, &jsonrpc.Error{Code: codeInvalidParams, Message: fmt.Sprintf("unknown tool %q: tools/list lists the assistants this API key can run", req.Params.Name)}
	}
	if res := c.read(req.Params.Arguments); res != nil {
		return res, nil
	}
	var waiting []pending
	if c.thread != "" {
		th, err := h.DB.GetThread(ctx, tenant, c.thread)
		switch {
		case errors.Is(err, db.ErrNotFound) && c.answer != nil:
			return toolError("thread %s does not exist, so there is nothing to answer: leave out answer and thread_id to start a new thread", c.thread), nil
		case errors.Is(err, db.ErrNotFound):
			// A thread ID of the caller's choosing: created by the run.
		case err != nil:
			h.log().Error("mcp: reading a thread failed", "tenant", tenant, "thread", c.thread, "err", err)
			return nil, fmt.Errorf("reading thread %s failed: %w", c.thread, err)
		case th.Status == db.ThreadInterrupted:
			waiting = pendingFrom(th.Interrupts)
		}
	}
	kw := runs.Kwargs{StreamMode: streamModes, StreamSubgraphs: true}
	switch {
	case c.answer != nil && len(waiting) == 0:
		return toolError("thread %s is not waiting for an answer: leave out answer (send a message or input to continue it)", c.thread), nil
	case c.answer != nil:
		kw.Command = &runs.Command{Resume: mustJSON(map[string]json.RawMessage{waiting[0].ID: c.answer})}
	case len(waiting) > 0:
		q := question(waiting[0])
		return toolError("thread %s waits for an answer to: %s\nCall %s again with {\"thread_id\": %q, \"answer\": ...} to answer it.", c.thread, q.Text, c.entry.tool.Name, c.thread), nil
	default:
		kw.Input = c.input
	}
	if c.thread == "" {
		c.thread = uuid.NewString()
	}
	fromElicit := false // the resume in kw is what the person submitted
	for round := 0; ; round++ {
		run, err := h.Runs.Create(ctx, h.Enqueue, runs.CreateRequest{
			Tenant: tenant, ThreadID: c.thread, AssistantID: c.entry.assistant.ID, Kwargs: kw,
			Metadata: db.Metadata{"source": "mcp"}, MultitaskStrategy: runs.Reject, CreateThread: true,
		})
		if err != nil && run.ID == "" {
			var ie *runs.InputError
			switch {
			case errors.As(err, &ie) && fromElicit && round < maxElicitRounds:
				// The person's answer does not fit: ask again, saying why.
				value, how := h.elicit(ctx, c, waiting[0], ie.Detail)
				if value == nil {
					return h.waitingResult(c, db.Run{}, outcome{waiting: waiting}, how, ""), nil
				}
				kw.Command = &runs.Command{Resume: mustJSON(map[string]json.RawMessage{waiting[0].ID: value})}
				continue
			case errors.As(err, &ie) && kw.Command != nil:
				return h.refusedAnswer(c, waiting, ie), nil
			case errors.As(err, &ie):
				return toolError("the assistant refused the input: %s (at %s); tools/list shows the arguments it takes", ie.Detail, cmpOr(ie.Pointer, "/")), nil
			case errors.Is(err, runs.ErrThreadBusy):
				return toolError("thread %s has a run in progress; call again when it ends", c.thread), nil
			case errors.Is(err, db.ErrNotFound), errors.Is(err, db.ErrInvalid):
				return toolError("%v", err), nil
			}
			h.log().Error("mcp: creating a run failed", "tenant", tenant, "thread", c.thread, "err", err)
			return nil, fmt.Errorf("creating the run failed: %w", err)
		}
		out, err := h.follow(ctx, c, run)
		if err != nil {
			if cancelledByClient(ctx) {
				// notifications/cancelled: the caller no longer wants it.
				h.stopRun(ctx, tenant, run)
				return nil, ctx.Err()
			}
			if ctx.Err() != nil {
				return nil, ctx.Err() // the client left; the run goes on and the thread keeps it
			}
			h.log().Error("mcp: following a run failed", "tenant", tenant, "run", run.ID, "err", err)
			return nil, fmt.Errorf("following run %s failed: %w", run.ID, err)
		}
		if out.runErr != "" {
			return toolError("the run %s on thread %s failed: %s", run.ID, c.thread, out.runErr), nil
		}
		if len(out.waiting) == 0 {
			return h.done(ctx, c, run, out)
		}
		waiting = out.waiting
		if round >= maxElicitRounds {
			return h.waitingResult(c, run, out, "", "The run asked more questions than one call answers."), nil
		}
		value, how := h.elicit(ctx, c, waiting[0], "")
		if value == nil {
			return h.waitingResult(c, run, out, how, ""), nil
		}
		fromElicit = true
		kw = runs.Kwargs{StreamMode: streamModes, StreamSubgraphs: true,
			Command: &runs.Command{Resume: mustJSON(map[string]json.RawMessage{waiting[0].ID: value})}}
	}
}

// read reads the call's arguments into c, or returns the tool error
// saying what is wrong with them.
func (c *call) read(raw json.RawMessage) *mcp.CallToolResult {
	args := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return toolError("the arguments must be a JSON object: %v", err)
		}
	}
	name := c.entry.tool.Name
	if t, ok := args[ArgThread]; ok && !c.entry.stateKeys[ArgThread] {
		if err := json.Unmarshal(t, &c.thread); err != nil {
			return toolError("thread_id must be a string (a result's thread_id)")
		}
		if p := db.IDProblem(c.thread); p != "" && c.thread != "" {
			return toolError("thread_id %s (thread IDs are printable text of at most %d bytes)", p, db.MaxIDLength)
		}
		delete(args, ArgThread)
	}
	if a, ok := args[ArgAnswer]; ok && !c.entry.stateKeys[ArgAnswer] {
		if c.thread == "" {
			return toolError("answer needs thread_id: the thread_id of the result that asked the question")
		}
		c.answer = a
		delete(args, ArgAnswer)
		if len(args) > 0 {
			return toolError("pass answer with thread_id only: the run resumes from its question, so it takes no new input (%s)", strings.Join(keys(args), ", "))
		}
		return nil
	}
	if c.entry.chat {
		var msg string
		m, ok := args[ArgMessage]
		if !ok || json.Unmarshal(m, &msg) != nil || strings.TrimSpace(msg) == "" {
			return toolError("%s needs message: your message to the assistant, as a non-empty string", name)
		}
		delete(args, ArgMessage)
		if len(args) > 0 {
			return toolError("%s takes message, thread_id and answer; it does not take %s", name, strings.Join(keys(args), ", "))
		}
		c.input = mustJSON(map[string]any{"messages": []map[string]string{{"role": "user", "content": msg}}})
		return nil
	}
	c.input = mustJSON(args)
	return nil
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// refusedAnswer answers an answer the run service refused (it does not
// fit the question's schema): the thread still waits, and the result says
// what was wrong and asks again.
func (h *Handler) refusedAnswer(c *call, waiting []pending, ie *runs.InputError) *mcp.CallToolResult {
	q := question(waiting[0])
	return toolError("that answer does not fit the question: %s\nThe thread %s still waits for an answer to: %s\nCall %s again with thread_id and an answer that fits%s.",
		ie.Detail, c.thread, q.Text, c.entry.tool.Name, schemaHint(q.Schema))
}

func schemaHint(s json.RawMessage) string {
	if len(s) == 0 {
		return ""
	}
	return " this schema: " + compact(s)
}

// done is the result of a run that ended.
func (h *Handler) done(ctx context.Context, c *call, run db.Run, out outcome) (*mcp.CallToolResult, error) {
	r := Result{ThreadID: c.thread, RunID: run.ID, Status: StatusDone}
	text := out.answer
	if c.entry.chat {
		r.Answer = out.answer
	} else {
		th, err := h.DB.GetThread(ctx, c.tenant, c.thread)
		if err != nil {
			return nil, fmt.Errorf("reading thread %s after its run: %w", c.thread, err)
		}
		if len(th.Values) > 0 && string(th.Values) != "null" {
			r.Values = th.Values
		}
		if text == "" {
			text = compact(th.Values)
		}
	}
	if text == "" {
		text = "(the run ended without an answer)"
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{
			&mcp.TextContent{Text: text},
			&mcp.TextContent{Text: fmt.Sprintf("thread_id: %s (pass it to %s to continue this thread)", c.thread, c.entry.tool.Name)},
		},
		StructuredContent: r,
	}, nil
}

// waitingResult is the result of a run that waits for a person who was
// not asked (or did not answer) through elicitation: what it asks, and
// how to answer.
func (h *Handler) waitingResult(c *call, run db.Run, out outcome, elicited, note string) *mcp.CallToolResult {
	q := question(out.waiting[0])
	q.Elicitation = elicited
	var b strings.Builder
	if out.answer != "" {
		b.WriteString(out.answer + "\n\n")
	}
	switch elicited {
	case "declined":
		b.WriteString("The person declined to answer. ")
	case "cancelled":
		b.WriteString("The question was dismissed without an answer. ")
	}
	if note != "" {
		b.WriteString(note + " ")
	}
	fmt.Fprintf(&b, "The run waits for an answer to:\n%s\n\nTo answer, call %s again with {\"thread_id\": %q, \"answer\": <the answer>}", q.Text, c.entry.tool.Name, c.thread)
	if len(q.Schema) > 0 {
		fmt.Fprintf(&b, "; the answer fits this JSON Schema: %s", compact(q.Schema))
	}
	b.WriteString(".")
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: Result{ThreadID: c.thread, RunID: run.ID, Status: StatusWaiting, Answer: out.answer, Question: q},
	}
}
