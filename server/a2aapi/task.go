package a2aapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/lcmsg"
	"github.com/trellis-agents/trellis/server/openaiapi"
)

// Run metadata the wire writes: every run it creates is marked with the
// source; a run that continues a task names the task's first run; a
// task's first run records how many messages its thread had before it,
// where the task's history starts.
const (
	mdSource = "source"
	mdTask   = "a2a_task"
	mdFrom   = "a2a_from"
	// mdCanceled, on the thread, names the task cancelled while it waited
	// for an answer: the thread still holds the question, but the task is
	// over and the next message starts a new one.
	mdCanceled = "a2a_canceled"
	source     = "a2a"
)

// maxTaskRuns bounds the runs read to find a task's.
const maxTaskRuns = 1000

// taskSep joins a task's first run and its thread in the task's ID. Run
// IDs are UUIDs, so the first separator ends the run's part and a thread
// ID may contain it.
const taskSep = "@"

// taskID is the ID of the task whose first run is run on thread.
func taskID(run, thread string) a2a.TaskID { return a2a.TaskID(run + taskSep + thread) }

// splitTaskID reads a task ID; ok is false when it is not one of ours.
func splitTaskID(id a2a.TaskID) (run, thread string, ok bool) {
	run, thread, ok = strings.Cut(string(id), taskSep)
	if !ok || run == "" || db.IDProblem(run) != "" || db.IDProblem(thread) != "" {
		return "", "", false
	}
	return run, thread, true
}

// task is a task as the database has it: its thread and its runs, oldest
// first.
type task struct {
	id     a2a.TaskID
	thread db.Thread
	runs   []db.Run
}

func (t *task) first() db.Run { return t.runs[0] }
func (t *task) last() db.Run  { return t.runs[len(t.runs)-1] }

// errTaskNotFound is the A2A error for a task ID that names no task of
// this assistant and tenant.
func errTaskNotFound(id a2a.TaskID) error {
	return a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %q not found (task IDs come from this agent's answers; a task of another tenant or agent is not found either)", id))
}

// loadTask reads a task of assistant: its thread and runs.
func (ag *agent) loadTask(ctx context.Context, id a2a.TaskID) (*task, error) {
	root, thread, ok := splitTaskID(id)
	if !ok {
		return nil, errTaskNotFound(id)
	}
	th, err := ag.h.DB.GetThread(ctx, ag.tenant, thread)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTaskNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	all, err := ag.h.DB.ListRuns(ctx, ag.tenant, thread, db.RunQuery{Limit: maxTaskRuns})
	if err != nil {
		return nil, err
	}
	t := &task{id: id, thread: th}
	for _, r := range all {
		if r.ID == root || r.Metadata[mdTask] == root {
			t.runs = append(t.runs, r)
		}
	}
	// The first run leads; the others (answers) follow in creation order.
	slices.SortStableFunc(t.runs, func(a, b db.Run) int {
		switch {
		case a.ID == root:
			return -1
		case b.ID == root:
			return 1
		}
		return a.CreatedAt.Compare(b.CreatedAt)
	})
	if len(t.runs) == 0 || t.first().ID != root || t.first().AssistantID != ag.assistant.ID || t.first().Metadata[mdSource] != source {
		return nil, errTaskNotFound(id)
	}
	return t, nil
}

// newest reports whether the task's last run is its thread's newest run,
// so the thread's interrupts are the task's.
func (ag *agent) newest(ctx context.Context, t *task) (bool, error) {
	rs, err := ag.h.DB.ListRuns(ctx, ag.tenant, t.thread.ID, db.RunQuery{Limit: 1})
	if err != nil {
		return false, err
	}
	return len(rs) == 1 && rs[0].ID == t.last().ID, nil
}

// state is the task's A2A state, and the waiting interrupts when it is
// input-required.
func (ag *agent) state(ctx context.Context, t *task) (a2a.TaskState, []openaiapi.Waiting, error) {
	last := t.last()
	switch last.Status {
	case db.RunPending:
		if len(t.runs) == 1 {
			return a2a.TaskStateSubmitted, nil, nil
		}
		return a2a.TaskStateWorking, nil, nil
	case db.RunRunning:
		return a2a.TaskStateWorking, nil, nil
	case db.RunError, db.RunTimeout:
		return a2a.TaskStateFailed, nil, nil
	}
	// A run that stops for a person ends interrupted too; one that was
	// cancelled says so.
	if last.Status == db.RunInterrupted && last.CancelRequested != "" {
		return a2a.TaskStateCanceled, nil, nil
	}
	if t.thread.Status == db.ThreadInterrupted {
		newest, err := ag.newest(ctx, t)
		if err != nil {
			return "", nil, err
		}
		if waiting := openaiapi.WaitingFrom(t.thread.Interrupts); newest && len(waiting) > 0 {
			if t.thread.Metadata[mdCanceled] == t.first().ID {
				return a2a.TaskStateCanceled, nil, nil // cancelled while it waited
			}
			return waitState(waiting), waiting, nil
		}
	}
	if last.Status == db.RunInterrupted {
		return a2a.TaskStateCanceled, nil, nil // stopped by another client's double-text
	}
	return a2a.TaskStateCompleted, nil, nil
}

// view builds the A2A task: its state with the status message (the
// question when it waits, the answer when it completed, the error when it
// failed), its history (the thread's messages since the task began) and
// the answer as an artifact once completed. problems, when set, are why
// the last answer did not fit; they lead the question.
func (ag *agent) view(ctx context.Context, t *task, problems []string) (*a2a.Task, error) {
	state, waiting, err := ag.state(ctx, t)
	if err != nil {
		return nil, err
	}
	ctxID := t.thread.ID
	out := &a2a.Task{ID: t.id, ContextID: ctxID, Status: a2a.TaskStatus{State: state}}
	at := t.last().UpdatedAt
	out.Status.Timestamp = &at
	out.Metadata = map[string]any{"trellis": map[string]any{"thread_id": ctxID, "run_id": t.last().ID, "assistant_id": t.first().AssistantID}}
	from := 0
	if f, ok := t.first().Metadata[mdFrom].(float64); ok && f > 0 {
		from = int(f)
	} else if n, ok := t.first().Metadata[mdFrom].(int); ok {
		from = n
	}
	out.History = historyOf(t.thread.Values, from, t.id, ctxID)
	switch state {
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		out.Status.Message = question(waiting, problems, t.id, ctxID)
	case a2a.TaskStateCompleted:
		if m := lastAgent(out.History); m != nil {
			out.Status.Message = m
			out.Artifacts = []*a2a.Artifact{answerArtifact(t, m.Parts)}
		}
	case a2a.TaskStateFailed:
		msg := t.last().Error
		if msg == "" {
			msg = "the run ended with status " + string(t.last().Status)
		}
		out.Status.Message = agentMessage(t.id, ctxID, "status-"+t.last().ID, a2a.NewTextPart(msg))
	case a2a.TaskStateCanceled:
		out.Status.Message = agentMessage(t.id, ctxID, "status-"+t.last().ID, a2a.NewTextPart("The task was cancelled; the steps it finished keep their writes."))
	}
	return out, nil
}

// answerArtifact is the task's answer: the last agent message's parts.
func answerArtifact(t *task, parts a2a.ContentParts) *a2a.Artifact {
	return &a2a.Artifact{ID: a2a.ArtifactID("answer-" + t.last().ID), Name: "answer", Parts: parts}
}

func agentMessage(task a2a.TaskID, ctxID, id string, parts ...*a2a.Part) *a2a.Message {
	return &a2a.Message{ID: id, Role: a2a.MessageRoleAgent, TaskID: task, ContextID: ctxID, Parts: parts}
}

// question is the status message of an input-required task: what the
// first waiting interrupt asks as text (led by why the last answer did not
// fit), and a data part with every waiting interrupt's ID, kind, payload
// and answer schema.
func question(waiting []openaiapi.Waiting, problems []string, task a2a.TaskID, ctxID string) *a2a.Message {
	text, _ := openaiapi.Describe(waiting[0])
	if r := authRequest(waiting[0]); r != nil {
		text = authText(r)
	}
	if len(problems) > 0 {
		text = "That answer did not fit: " + strings.Join(problems, "; ") + "\n\n" + text
	}
	items := make([]map[string]any, len(waiting))
	for i, w := range waiting {
		_, ia := openaiapi.Describe(w)
		item := map[string]any{"interrupt_id": w.ID, "kind": ia.Kind, "payload": w.Value}
		if len(w.Schema) > 0 && bytes.HasPrefix(bytes.TrimSpace(w.Schema), []byte("{")) {
			item["response_schema"] = w.Schema
		}
		items[i] = item
	}
	data := map[string]any{"interrupts": items}
	if len(problems) > 0 {
		data["problems"] = problems
	}
	return agentMessage(task, ctxID, "question-"+waiting[0].ID, a2a.NewTextPart(text), a2a.NewDataPart(data))
}

// historyOf reads the thread's messages from index from on as A2A
// messages: a person's as user, the assistant's text as agent; tool
// results and tool-call-only turns are the agent's work, not the
// conversation, and are left out.
func historyOf(values json.RawMessage, from int, task a2a.TaskID, ctxID string) []*a2a.Message {
	var st struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if len(values) == 0 || json.Unmarshal(values, &st) != nil || from >= len(st.Messages) {
		return nil
	}
	var out []*a2a.Message
	for i, raw := range st.Messages[from:] {
		m, err := lcmsg.ToLLM(raw)
		if err != nil {
			if json.Unmarshal(raw, &m) != nil {
				continue
			}
		}
		text := strings.TrimSpace(m.Text())
		if text == "" {
			continue
		}
		var role a2a.MessageRole
		switch m.Role {
		case llm.RoleUser:
			role = a2a.MessageRoleUser
		case llm.RoleAssistant:
			if m.Name != "" {
				continue // an internal voice (a reviewer): the agent's working, not its answer
			}
			role = a2a.MessageRoleAgent
		default:
			continue
		}
		id := m.ID
		if id == "" {
			id = fmt.Sprintf("%s-m%d", ctxID, from+i)
		}
		out = append(out, &a2a.Message{ID: id, Role: role, TaskID: task, ContextID: ctxID, Parts: a2a.ContentParts{a2a.NewTextPart(m.Text())}})
	}
	return out
}

// lastAgent is the history's last agent message, when the history ends
// with one.
func lastAgent(h []*a2a.Message) *a2a.Message {
	if len(h) == 0 || h[len(h)-1].Role != a2a.MessageRoleAgent {
		return nil
	}
	return h[len(h)-1]
}

// trimHistory keeps the last n messages (nil n: all; 0: none).
func trimHistory(t *a2a.Task, n *int) {
	if n == nil {
		return
	}
	if *n <= 0 {
		t.History = nil
		return
	}
	if len(t.History) > *n {
		t.History = t.History[len(t.History)-*n:]
	}
}
