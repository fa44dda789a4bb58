package a2aapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/openaiapi"
	"github.com/trellis-agents/trellis/server/runs"
)

// streamModes are what the wire reads of a run: model chunks (the
// answer's text as it comes) and node updates.
var streamModes = []string{runs.ModeMessages, runs.ModeUpdates}

// agent is one request's A2A agent: an assistant of a tenant. It
// implements the SDK's request handler over the run service.
type agent struct {
	h         *Handler
	tenant    string
	assistant db.Assistant
}

var _ a2asrv.RequestHandler = (*agent)(nil)

// failure is the A2A error for a failure of the server: a2a errors as
// they are, the database's storage failures with their advice, the rest
// as internal errors naming what failed.
func (ag *agent) failure(doing string, err error) error {
	var ae *a2a.Error
	if errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return a2a.NewError(a2a.ErrInternalError, "the request ended before the server could "+doing)
	}
	ag.h.log().Error("a2a request failed", "doing", doing, "err", err)
	if se, ok := db.AsStorage(err); ok {
		return a2a.NewError(a2a.ErrServerError, se.Advice())
	}
	return a2a.NewError(a2a.ErrInternalError, "the server failed to "+doing+": "+err.Error())
}

// GetTask answers tasks/get: the task with its history (the last
// historyLength messages when given).
func (ag *agent) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	t, err := ag.loadTask(ctx, req.ID)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	v, err := ag.view(ctx, t, nil)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	trimHistory(v, req.HistoryLength)
	return v, nil
}

// CancelTask answers tasks/cancel: the task's live run is stopped as an
// interrupt double-text stops it (the steps it finished keep their
// writes), and the task, once the run has ended, is answered canceled. A
// task waiting for an answer runs nothing: it is marked cancelled on its
// thread, and the context takes new tasks.
func (ag *agent) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	t, err := ag.loadTask(ctx, req.ID)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	state, _, err := ag.state(ctx, t)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	switch {
	case state.Terminal():
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, fmt.Sprintf("task %s is %s already; only a submitted or working task can be cancelled", t.id, stateWord(state)))
	case waits(state):
		// Nothing runs: the task ends here, and the thread's question is
		// left unanswered (the next task's input starts over).
		if _, err := ag.h.DB.UpdateThreadMetadata(ctx, ag.tenant, t.thread.ID, db.Metadata{mdCanceled: t.first().ID}); err != nil {
			return nil, ag.failure("cancel the task", err)
		}
		if t, err = ag.loadTask(ctx, req.ID); err != nil {
			return nil, ag.failure("read the task", err)
		}
		return ag.view(ctx, t, nil)
	}
	run := t.last()
	if err := ag.h.Runs.Stop(ctx, ag.tenant, run, runs.Interrupt); err != nil && !errors.Is(err, db.ErrConflict) {
		return nil, ag.failure("cancel the task's run", err)
	}
	if _, err := runs.Follow(ctx, ag.h.DB, ag.h.Runs.Broker(), ag.tenant, run.ThreadID, run.ID, 0, ag.h.Poll, func(db.Event) error { return nil }); err != nil {
		return nil, ag.failure("wait for the cancelled run to end", err)
	}
	if t, err = ag.loadTask(ctx, req.ID); err != nil {
		return nil, ag.failure("read the task", err)
	}
	v, err := ag.view(ctx, t, nil)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	if v.Status.State != a2a.TaskStateCanceled {
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, fmt.Sprintf("task %s ended %s before the cancel reached it", t.id, stateWord(v.Status.State)))
	}
	return v, nil
}

// stateWord is a state as a sentence says it.
func stateWord(s a2a.TaskState) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}

// SendMessage answers message/send: the message starts a task (or
// answers the one it names), and the answer is the task once it has
// stopped working — completed, input-required, failed or canceled — or at
// once, submitted, with returnImmediately.
func (ag *agent) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	tn, err := ag.start(ctx, req)
	if err != nil {
		return nil, err
	}
	var hist *int
	if req.Config != nil {
		hist = req.Config.HistoryLength
	}
	if tn.run.ID != "" && (req.Config == nil || !req.Config.ReturnImmediately) {
		if _, err := runs.Follow(ctx, ag.h.DB, ag.h.Runs.Broker(), ag.tenant, tn.run.ThreadID, tn.run.ID, 0, ag.h.Poll, func(db.Event) error { return nil }); err != nil {
			return nil, ag.failure("wait for the task's run", err)
		}
	}
	v, err := ag.reload(ctx, tn)
	if err != nil {
		return nil, err
	}
	trimHistory(v, hist)
	return v, nil
}

// reload reads the task a turn made or continued, with the turn's
// message in its history until the thread has it.
func (ag *agent) reload(ctx context.Context, tn *turn) (*a2a.Task, error) {
	t, err := ag.loadTask(ctx, tn.task)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	v, err := ag.view(ctx, t, tn.problems)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	if tn.fresh && len(v.History) == 0 && tn.msg != nil {
		m := *tn.msg
		m.TaskID, m.ContextID = v.ID, v.ContextID
		v.History = []*a2a.Message{&m}
	}
	return v, nil
}

// SendStreamingMessage answers message/stream: the task first, then its
// progress (working, the answer's text as artifact chunks), then the
// answer whole and the final status — input-required, completed, failed
// or canceled — after which the stream ends.
func (ag *agent) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		tn, err := ag.start(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		v, err := ag.reload(ctx, tn)
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(v, nil) || tn.run.ID == "" {
			return // the answer did not fit: the task asks again, and no run started
		}
		if tn.repeat && (v.Status.State.Terminal() || waits(v.Status.State)) {
			return // sent again after its run ended: the task as it stands is the answer
		}
		ag.follow(ctx, tn.task, tn.run, yield)
	}
}

// SubscribeToTask answers tasks/resubscribe: the task, then, while it
// works, its progress as SendStreamingMessage streams it. A task that
// has ended is refused, as the specification says.
func (ag *agent) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		t, err := ag.loadTask(ctx, req.ID)
		if err != nil {
			yield(nil, ag.failure("read the task", err))
			return
		}
		v, err := ag.view(ctx, t, nil)
		if err != nil {
			yield(nil, ag.failure("read the task", err))
			return
		}
		if v.Status.State.Terminal() {
			yield(nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s: there is nothing to subscribe to; read it with GetTask", t.id, stateWord(v.Status.State))))
			return
		}
		if !yield(v, nil) || waits(v.Status.State) {
			return
		}
		ag.follow(ctx, t.id, t.last(), yield)
	}
}

// follow streams a task's run: working, the answer's text chunks, then
// the answer whole and the final status.
func (ag *agent) follow(ctx context.Context, id a2a.TaskID, run db.Run, yield func(a2a.Event, error) bool) {
	info := a2a.TaskInfo{TaskID: id, ContextID: run.ThreadID}
	if !yield(a2a.NewStatusUpdateEvent(info, a2a.TaskStateWorking, nil), nil) {
		return
	}
	art := a2a.ArtifactID("answer-" + run.ID)
	ch := newChunker()
	stopped := errors.New("the client left")
	_, err := runs.Follow(ctx, ag.h.DB, ag.h.Runs.Broker(), ag.tenant, run.ThreadID, run.ID, 0, ag.h.Poll, func(ev db.Event) error {
		text := ch.add(ev)
		if text == "" {
			return nil
		}
		e := &a2a.TaskArtifactUpdateEvent{TaskID: id, ContextID: run.ThreadID, Append: ch.sent > 1,
			Artifact: &a2a.Artifact{ID: art, Name: "answer", Parts: a2a.ContentParts{a2a.NewTextPart(text)}}}
		if !yield(e, nil) {
			return stopped
		}
		return nil
	})
	if errors.Is(err, stopped) || ctx.Err() != nil {
		return
	}
	if err != nil {
		yield(nil, ag.failure("read the task's run", err))
		return
	}
	t, err := ag.loadTask(ctx, id)
	if err != nil {
		yield(nil, ag.failure("read the task", err))
		return
	}
	v, err := ag.view(ctx, t, nil)
	if err != nil {
		yield(nil, ag.failure("read the task", err))
		return
	}
	for _, a := range v.Artifacts {
		// The answer whole, replacing the chunks (a node that did not
		// stream, or a reply held back as JSON, arrives only here).
		if !yield(&a2a.TaskArtifactUpdateEvent{TaskID: id, ContextID: run.ThreadID, Artifact: a, LastChunk: true}, nil) {
			return
		}
	}
	st := a2a.NewStatusUpdateEvent(info, v.Status.State, v.Status.Message)
	st.Status.Timestamp = v.Status.Timestamp
	yield(st, nil)
}

// GetExtendedAgentCard: the public card is the whole card.
func (ag *agent) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.NewError(a2a.ErrExtendedCardNotConfigured, "this agent has no extended card: its card at /.well-known/agent-card.json is the whole card")
}

// turn is what a message started: the task it made or continued, and
// its run (none when the answer did not fit: problems say why, and the
// task asks again).
type turn struct {
	task     a2a.TaskID
	run      db.Run
	fresh    bool
	msg      *a2a.Message
	problems []string
	// repeat: the message was sent before (dedup.go), and run is the one
	// it started then.
	repeat bool
}

// start reads a message and starts its run: a new task on the message's
// context (a new thread when it names none, derived from the message's
// ID), or the answer to the question of the task it names. A message sent
// again gets the run it started the first time (dedup.go).
func (ag *agent) start(ctx context.Context, req *a2a.SendMessageRequest) (*turn, error) {
	in, err := readMessage(req)
	if err != nil {
		return nil, err
	}
	if req.Message.TaskID != "" {
		return ag.answer(ctx, req, in)
	}
	thread := req.Message.ContextID
	switch {
	case thread == "" && req.Message.ID == "":
		thread = checkpoint.NewID()
	case thread == "":
		thread = ag.contextThread(req.Message.ID)
	case db.IDProblem(thread) != "":
		return nil, a2a.NewError(a2a.ErrInvalidParams, "message.contextId "+db.IDProblem(thread))
	}
	from := 0
	th, err := ag.h.DB.GetThread(ctx, ag.tenant, thread)
	switch {
	case err == nil:
		run, again, err := ag.repeatedRun(ctx, thread, req.Message.ID)
		if err != nil {
			return nil, ag.failure("read the context's runs", err)
		}
		if again {
			return repeatTurn(run, req.Message), nil
		}
		if th.Status == db.ThreadInterrupted && len(openaiapi.WaitingFrom(th.Interrupts)) > 0 && !ag.waitingCanceled(ctx, th) {
			return nil, ag.waitingRefusal(ctx, th)
		}
		from = messageCount(th.Values)
	case !errors.Is(err, db.ErrNotFound):
		return nil, ag.failure("read the context's thread", err)
	}
	content := in.content()
	if content == "" {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "message.parts carry no text and no data: send a text part (or a data part)")
	}
	md := db.Metadata{mdSource: source, mdFrom: from, mdMessage: req.Message.ID}
	if req.Config != nil && req.Config.PushConfig != nil {
		p, err := ag.checkPush(ctx, req.Config.PushConfig)
		if err != nil {
			return nil, err
		}
		md[mdPush] = []pushConfig{p} // with the run: notified even if it ends at once
	}
	kw := runs.Kwargs{StreamMode: streamModes, Input: mustJSON(map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}})}
	run, refused, err := ag.create(ctx, thread, kw, md)
	if refused != nil {
		return nil, a2a.NewError(a2a.ErrInvalidParams, refused.Detail)
	}
	if err != nil {
		return nil, err
	}
	return &turn{task: taskID(run.ID, thread), run: run, fresh: true, msg: req.Message}, nil
}

// answer continues the task a message names: the message answers what
// the task asks.
func (ag *agent) answer(ctx context.Context, req *a2a.SendMessageRequest, in message) (*turn, error) {
	m := req.Message
	t, err := ag.loadTask(ctx, m.TaskID)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	if m.ContextID != "" && m.ContextID != t.thread.ID {
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("task %s belongs to context %s, not %s: send the task's contextId, or none", t.id, t.thread.ID, m.ContextID))
	}
	if run, again, _ := findMessage(t.runs, ag.assistant.ID, m.ID); again {
		return repeatTurn(run, m), nil // this answer was taken before
	}
	state, waiting, err := ag.state(ctx, t)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	switch {
	case state.Terminal():
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s: a finished task takes no more messages; send the message without taskId to start a new task in context %s", t.id, stateWord(state), t.thread.ID))
	case !waits(state):
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s and asks nothing yet: wait until it is input-required (GetTask, or SubscribeToTask) before answering", t.id, stateWord(state)))
	}
	tn := &turn{task: t.id, msg: m}
	if req.Config != nil && req.Config.PushConfig != nil {
		p, err := ag.checkPush(ctx, req.Config.PushConfig)
		if err != nil {
			return nil, err
		}
		if err := ag.addPush(ctx, t, p); err != nil {
			return nil, ag.failure("store the push config", err)
		}
	}
	w := waiting[0]
	var value json.RawMessage
	switch {
	case len(in.data) > 0:
		value = in.data[0] // the answer as the interrupt's schema has it
	default:
		var probs []string
		value, probs = openaiapi.ParseAnswer(w, in.text())
		if len(probs) > 0 {
			tn.problems = probs
			return tn, nil
		}
	}
	kw := runs.Kwargs{StreamMode: streamModes, Command: &runs.Command{Resume: mustJSON(map[string]json.RawMessage{w.ID: value})}}
	run, refused, err := ag.create(ctx, t.thread.ID, kw, db.Metadata{mdSource: source, mdTask: t.first().ID, mdMessage: m.ID})
	if refused != nil {
		// The agent's own check of the answer (its schema): asked again.
		tn.problems = []string{refused.Detail}
		return tn, nil
	}
	if err != nil {
		return nil, err
	}
	tn.run = run
	return tn, nil
}

// create starts a run of the agent's assistant on thread: the run, or
// the run service's refusal of the request (refused), or another error
// as an A2A error.
func (ag *agent) create(ctx context.Context, thread string, kw runs.Kwargs, md db.Metadata) (run db.Run, refused *runs.InputError, err error) {
	run, err = ag.h.Runs.Create(ctx, ag.h.Enqueue, runs.CreateRequest{
		Tenant: ag.tenant, ThreadID: thread, AssistantID: ag.assistant.ID, Kwargs: kw, Metadata: md,
		MultitaskStrategy: runs.Reject, CreateThread: true,
	})
	if err == nil || run.ID != "" {
		return run, nil, nil // stored (a failure to queue it only delays it)
	}
	switch {
	case errors.As(err, &refused):
		return db.Run{}, refused, nil
	case errors.Is(err, runs.ErrThreadBusy):
		return db.Run{}, nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("context %s has a task working; wait until it stops (or cancel it) before sending another message", thread))
	}
	return db.Run{}, nil, ag.failure("start the task's run", err)
}

// waitingRoot is the first run of the task a waiting thread's newest run
// belongs to ("" when it cannot be read).
func (ag *agent) waitingRoot(ctx context.Context, th db.Thread) string {
	rs, err := ag.h.DB.ListRuns(ctx, ag.tenant, th.ID, db.RunQuery{Limit: 1})
	if err != nil || len(rs) != 1 {
		return ""
	}
	if root, _ := rs[0].Metadata[mdTask].(string); root != "" {
		return root
	}
	return rs[0].ID
}

// waitingCanceled reports whether the task a thread waits for was
// cancelled, so a new task may start on it.
func (ag *agent) waitingCanceled(ctx context.Context, th db.Thread) bool {
	c, _ := th.Metadata[mdCanceled].(string)
	return c != "" && c == ag.waitingRoot(ctx, th)
}

// waitingRefusal is the error for a new task on a context whose task
// waits for an answer, naming that task.
func (ag *agent) waitingRefusal(ctx context.Context, th db.Thread) error {
	task := ""
	if root := ag.waitingRoot(ctx, th); root != "" {
		task = string(taskID(root, th.ID))
	}
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("context %s has task %s waiting for an answer: answer it (the message's taskId %q), or start a new context", th.ID, task, task))
}

// messageCount is how many messages a thread's state holds.
func messageCount(values json.RawMessage) int {
	var st struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if len(values) == 0 || json.Unmarshal(values, &st) != nil {
		return 0
	}
	return len(st.Messages)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
