package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	proto "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// Result is what a finished remote task produced.
type Result struct {
	Agent     string `json:"agent"`
	TaskID    string `json:"task_id,omitempty"` // "" when the agent answered with a message, not a task
	ContextID string `json:"context_id,omitempty"`
	// Text is the task's artifacts' text, or (without artifacts) its last
	// status message's.
	Text string `json:"text"`
}

// Event is the custom event (graph.Emit) a call streams: the remote task's
// status changes (Kind "remote_status") and artifact chunks (Kind
// "remote_artifact"), naming the agent and the task, so a page can show
// the hop.
type Event struct {
	Kind      string `json:"kind"`
	Agent     string `json:"agent"`
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id,omitempty"`
	// State is the task's state for a status event ("working",
	// "input-required", "completed", ...).
	State string `json:"state,omitempty"`
	// Text is the status message's text, or the artifact chunk's.
	Text string `json:"text,omitempty"`
	// Append says an artifact chunk continues the artifact's text.
	Append bool `json:"append,omitempty"`
}

// Question is the payload of the interrupt a remote question raises when
// the remote gives no question of a known kind: Kind is "ask_human", as
// the router's own questions, so the local wires show it as a plain text
// question; the answer is sent back as text.
type Question struct {
	Kind     string `json:"kind"`
	Question string `json:"question"`
	Agent    string `json:"agent"`
	TaskID   string `json:"task_id"`
}

// started is the first durable step: the remote task's IDs, or the
// message the agent answered with instead of a task.
type started struct {
	TaskID    string  `json:"task_id,omitempty"`
	ContextID string  `json:"context_id,omitempty"`
	Reply     *string `json:"reply,omitempty"`
}

// outcome is where a round of the remote task stopped: a final state, or
// a question.
type outcome struct {
	State   string          `json:"state"`
	Text    string          `json:"text,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"` // the local interrupt's payload, for a question
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// stream is a pulled event sequence; first holds an event read ahead.
type stream struct {
	next  func() (proto.Event, error, bool)
	stop  func()
	first proto.Event
	// answered marks the stream of an answer: its first event may be the
	// task as it was, still asking the question just answered.
	answered bool
}

func pull(seq iter.Seq2[proto.Event, error]) *stream {
	next, stop := iter.Pull2(seq)
	return &stream{next: next, stop: stop}
}

func (s *stream) close() {
	if s != nil {
		s.stop()
	}
}

// Call sends text to the remote agent as a new task and returns what the
// task produced, from inside a graph node (a tool's Call is one). The
// task's IDs are saved as the node's durable step before Call goes on, so
// when the node runs again (after an interrupt, a failure, a restart)
// Call follows the same remote task to its end instead of sending again.
// Each remote question becomes a graph.Interrupt: Call returns its
// *graph.InterruptError, which the node returns as is; on resume the
// answer goes back on the same task. Each round's outcome is a durable
// step too, so a node that runs again matches answers with questions in
// order. Use one Call per node (or name the calls apart in order: two
// calls in one node are two tasks, replayed in order).
func (a *Agent) Call(ctx context.Context, text string) (*Result, error) {
	c, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	var live *stream
	defer func() { live.close() }()
	msgID, err := graph.Durable(ctx, "a2a:"+a.cfg.Name+":message", func(context.Context) (string, error) {
		return proto.NewMessageID(), nil
	})
	if err != nil {
		return nil, err
	}
	st, err := graph.Durable(ctx, "a2a:"+a.cfg.Name+":task", func(ctx context.Context) (started, error) {
		msg := &proto.Message{ID: msgID, Role: proto.MessageRoleUser, Parts: proto.ContentParts{proto.NewTextPart(text)}}
		s := pull(c.SendStreamingMessage(ctx, &proto.SendMessageRequest{Message: msg}))
		ev, err, ok := s.next()
		if err == nil && !ok {
			err = errors.New("the stream ended before the task started")
		}
		if err != nil {
			s.close()
			return started{}, a.fail(ctx, "send the message", "", err)
		}
		if m, isMsg := ev.(*proto.Message); isMsg {
			s.close()
			reply := partsText(m.Parts)
			a.chunk(ctx, "a2a:message:"+m.ID, "", reply) // streamed once: a re-run reads the step
			return started{ContextID: m.ContextID, Reply: &reply}, nil
		}
		info := ev.TaskInfo()
		if info.TaskID == "" {
			s.close()
			return started{}, a.fail(ctx, "send the message", "", fmt.Errorf("the first event (%T) names no task", ev))
		}
		s.first, live = ev, s
		return started{TaskID: string(info.TaskID), ContextID: info.ContextID}, nil
	})
	if err != nil {
		return nil, err
	}
	if st.Reply != nil {
		return &Result{Agent: a.cfg.Name, ContextID: st.ContextID, Text: *st.Reply}, nil
	}
	for round := 0; ; round++ {
		n := strconv.Itoa(round)
		o, err := graph.Durable(ctx, "a2a:"+a.cfg.Name+":round:"+n, func(ctx context.Context) (outcome, error) {
			return a.follow(ctx, c, st, &live)
		})
		if err != nil {
			return nil, a.stopped(ctx, c, st, err)
		}
		switch proto.TaskState(o.State) {
		case proto.TaskStateCompleted:
			return &Result{Agent: a.cfg.Name, TaskID: st.TaskID, ContextID: st.ContextID, Text: o.Text}, nil
		case proto.TaskStateInputRequired, proto.TaskStateAuthRequired:
		default:
			return nil, &RemoteError{Agent: a.cfg.Name, Op: "the task ended " + stateWord(proto.TaskState(o.State)), TaskID: st.TaskID, State: stateWord(proto.TaskState(o.State)), Err: textErr(o.Text)}
		}
		live.close()
		live = nil
		var opts []graph.InterruptOption
		if len(o.Schema) > 0 {
			opts = append(opts, graph.ExpectAnswer(o.Schema))
		}
		answer, err := graph.Interrupt[json.RawMessage](ctx, o.Payload, opts...)
		if err != nil {
			return nil, err
		}
		// The answer's message ID follows from the task's first message
		// (a durable step) and the round, so an answer sent again after a
		// crash is the same message, which the remote may recognise
		// (Trellis does) instead of taking it twice.
		_, err = graph.Durable(ctx, "a2a:"+a.cfg.Name+":answer:"+n, func(ctx context.Context) (bool, error) {
			msg := &proto.Message{ID: msgID + "-answer-" + n, Role: proto.MessageRoleUser, TaskID: proto.TaskID(st.TaskID), ContextID: st.ContextID, Parts: answerParts(answer)}
			s := pull(c.SendStreamingMessage(ctx, &proto.SendMessageRequest{Message: msg}))
			ev, err, ok := s.next()
			if err == nil && !ok {
				err = errors.New("the stream ended before the remote took the answer")
			}
			if err != nil {
				s.close()
				return false, a.fail(ctx, "answer the task's question", st.TaskID, err)
			}
			s.first, s.answered, live = ev, true, s
			return true, nil
		})
		if err != nil {
			return nil, a.stopped(ctx, c, st, err)
		}
	}
}

// stopped is the error of a call that could not follow its task: when the
// local run was cancelled, the remote task is cancelled too (unless
// KeepRemoteOn keeps it), and the cancellation is returned.
func (a *Agent) stopped(ctx context.Context, c interface {
	CancelTask(context.Context, *proto.CancelTaskRequest) (*proto.Task, error)
}, st started, err error) error {
	if ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if a.cfg.KeepRemoteOn == nil || !a.cfg.KeepRemoteOn(cause) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = c.CancelTask(cctx, &proto.CancelTaskRequest{ID: proto.TaskID(st.TaskID)})
	}
	return ctx.Err()
}

// follow reads the task's events until it stops: a final state or a
// question. It uses the live stream when this run has one, else reads the
// task and subscribes to it (a node that runs again reattaches).
func (a *Agent) follow(ctx context.Context, c taskClient, st started, live **stream) (outcome, error) {
	f := follower{a: a, st: st, arts: map[proto.ArtifactID]*artifact{}}
	for quiet := 0; ; {
		if *live == nil {
			t, err := c.GetTask(ctx, &proto.GetTaskRequest{ID: proto.TaskID(st.TaskID)})
			if err != nil {
				return outcome{}, a.fail(ctx, "read the task", st.TaskID, err)
			}
			if o, done := f.onTask(ctx, t); done {
				return o, nil
			}
			if quiet > 0 {
				select {
				case <-ctx.Done():
					return outcome{}, ctx.Err()
				case <-time.After(a.cfg.PollInterval):
				}
			}
			*live = pull(c.SubscribeToTask(ctx, &proto.SubscribeToTaskRequest{ID: proto.TaskID(st.TaskID)}))
		}
		s := *live
		ev := s.first
		s.first = nil
		if t, isTask := ev.(*proto.Task); isTask && s.answered && (t.Status.State == proto.TaskStateInputRequired || t.Status.State == proto.TaskStateAuthRequired) {
			// The task as it stood before our answer: what it does with
			// the answer follows.
			s.answered = false
			continue
		}
		s.answered = false
		var err error
		ok := true
		if ev == nil {
			ev, err, ok = s.next()
		}
		if err != nil || !ok {
			s.close()
			*live = nil
			if ctx.Err() != nil {
				return outcome{}, ctx.Err()
			}
			// The stream ended or broke (a remote that cannot subscribe,
			// a dropped connection): read the task, then wait a little
			// before subscribing again.
			quiet++
			continue
		}
		quiet = 0
		var o outcome
		var done bool
		switch e := ev.(type) {
		case *proto.Task:
			o, done = f.onTask(ctx, e)
		case *proto.TaskStatusUpdateEvent:
			f.say(ctx, e.Status)
			o, done = f.onStatus(ctx, e.Status)
		case *proto.TaskArtifactUpdateEvent:
			f.onArtifact(ctx, e)
		case *proto.Message:
			o, done = outcome{State: string(proto.TaskStateCompleted), Text: partsText(e.Parts)}, true
		}
		if done && o.State == string(proto.TaskStateCompleted) && o.Text == "" {
			// A stream may end on a bare status: the task itself has the
			// artifacts (and the history) the answer is in.
			if t, err := c.GetTask(ctx, &proto.GetTaskRequest{ID: proto.TaskID(st.TaskID)}); err == nil {
				o.Text = f.finalText(t)
			}
		}
		if done {
			return o, nil
		}
	}
}

type taskClient interface {
	GetTask(context.Context, *proto.GetTaskRequest) (*proto.Task, error)
	SubscribeToTask(context.Context, *proto.SubscribeToTaskRequest) iter.Seq2[proto.Event, error]
}

// follower gathers a task's artifacts and emits its events.
type follower struct {
	a     *Agent
	st    started
	arts  map[proto.ArtifactID]*artifact
	order []proto.ArtifactID
}

type artifact struct{ text strings.Builder }

func (f *follower) emit(ctx context.Context, e Event) {
	e.Agent, e.TaskID, e.ContextID = f.a.cfg.Name, f.st.TaskID, f.st.ContextID
	graph.Emit(ctx, e)
}

func (f *follower) onTask(ctx context.Context, t *proto.Task) (outcome, bool) {
	for _, art := range t.Artifacts {
		if art != nil {
			f.set(art.ID, partsText(art.Parts), false)
		}
	}
	return f.onStatus(ctx, t.Status)
}

// finalText is a finished task's answer: its artifacts' text, else its
// status message's, else the last agent message of its history.
func (f *follower) finalText(t *proto.Task) string {
	var parts []string
	for _, art := range t.Artifacts {
		if art != nil {
			if s := partsText(art.Parts); s != "" {
				parts = append(parts, s)
			}
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n\n")
	}
	if t.Status.Message != nil {
		if s := partsText(t.Status.Message.Parts); s != "" {
			return s
		}
	}
	for i := len(t.History) - 1; i >= 0; i-- {
		if m := t.History[i]; m != nil && m.Role == proto.MessageRoleAgent {
			return partsText(m.Parts)
		}
	}
	return ""
}

func (f *follower) set(id proto.ArtifactID, text string, appendText bool) {
	a, ok := f.arts[id]
	if !ok {
		a = &artifact{}
		f.arts[id] = a
		f.order = append(f.order, id)
	}
	if !appendText {
		a.text.Reset()
	}
	a.text.WriteString(text)
}

func (f *follower) onArtifact(ctx context.Context, e *proto.TaskArtifactUpdateEvent) {
	if e.Artifact == nil {
		return
	}
	text := partsText(e.Artifact.Parts)
	f.set(e.Artifact.ID, text, e.Append)
	f.emit(ctx, Event{Kind: "remote_artifact", Text: text, Append: e.Append})
	f.chunk(ctx, "artifact:"+string(e.Artifact.ID), text)
}

// say streams a status update's message as the local run's message chunk:
// the remote's words as it says them (its progress notes, or its answer
// when it answers in the status). A question is not streamed: it becomes
// the local interrupt.
func (f *follower) say(ctx context.Context, s proto.TaskStatus) {
	if s.Message == nil || s.State == proto.TaskStateInputRequired || s.State == proto.TaskStateAuthRequired {
		return
	}
	id := s.Message.ID
	if id == "" {
		id = stateWord(s.State)
	}
	f.chunk(ctx, "status:"+id, partsText(s.Message.Parts))
}

// MetaAgent and MetaTask are the MessageChunk.Meta keys naming the remote
// agent and A2A task a streamed chunk came from.
const (
	MetaAgent = "remote_agent"
	MetaTask  = "a2a_task_id"
)

// chunk streams text as a message chunk of the local run, in the voice of
// the remote agent (Meta "voice", llm.MetaVoice): LangGraph clients see
// an AIMessageChunk named after the agent from the node that called it,
// as they see the tokens of a model called inside a tool; the local
// answer stays the local model's (the wires and the page skip voiced
// chunks as an agent's working). The message ID groups the chunks of one
// remote artifact or status message of the task.
func (f *follower) chunk(ctx context.Context, part, text string) {
	f.a.chunk(ctx, "a2a:"+f.st.TaskID+":"+part, f.st.TaskID, text)
}

// chunk writes one voiced message chunk (see follower.chunk); task is ""
// for an agent that answered with a message.
func (a *Agent) chunk(ctx context.Context, id, task, text string) {
	w := graph.Messages(ctx)
	if text == "" || !w.Enabled() {
		return
	}
	meta := map[string]string{llm.MetaVoice: a.cfg.Name, MetaAgent: a.cfg.Name}
	if task != "" {
		meta[MetaTask] = task
	}
	w.Write(graph.MessageChunk{MessageID: id, Part: graph.PartText, Text: text, Meta: meta})
}

func (f *follower) onStatus(ctx context.Context, s proto.TaskStatus) (outcome, bool) {
	var text string
	if s.Message != nil {
		text = partsText(s.Message.Parts)
	}
	f.emit(ctx, Event{Kind: "remote_status", State: stateWord(s.State), Text: text})
	switch {
	case s.State == proto.TaskStateCompleted:
		var parts []string
		for _, id := range f.order {
			if t := f.arts[id].text.String(); t != "" {
				parts = append(parts, t)
			}
		}
		if len(parts) > 0 {
			text = strings.Join(parts, "\n\n")
		}
		return outcome{State: string(s.State), Text: text}, true
	case s.State.Terminal():
		return outcome{State: string(s.State), Text: text}, true
	case s.State == proto.TaskStateInputRequired || s.State == proto.TaskStateAuthRequired:
		o := outcome{State: string(s.State), Text: text}
		o.Payload, o.Schema = f.question(s.Message, text)
		return o, true
	}
	return outcome{}, false
}

// question is the local interrupt's payload for a remote question: the
// remote's own first interrupt payload when it sends one in a data part
// the way Trellis does ({"interrupts": [{"payload": {"kind": ...},
// "response_schema": ...}]}), so a local page shows the same form or
// choice; otherwise a Question with the text.
func (f *follower) question(m *proto.Message, text string) (json.RawMessage, json.RawMessage) {
	if m != nil {
		for _, p := range m.Parts {
			d, ok := p.Content.(proto.Data)
			if !ok {
				continue
			}
			b, err := json.Marshal(d.Value)
			if err != nil {
				continue
			}
			var in struct {
				Interrupts []struct {
					Payload json.RawMessage `json:"payload"`
					Schema  json.RawMessage `json:"response_schema"`
				} `json:"interrupts"`
			}
			if json.Unmarshal(b, &in) != nil || len(in.Interrupts) == 0 {
				continue
			}
			var k struct {
				Kind string `json:"kind"`
			}
			first := in.Interrupts[0]
			if json.Unmarshal(first.Payload, &k) == nil && k.Kind != "" {
				return first.Payload, first.Schema
			}
		}
	}
	if text == "" {
		text = "The remote agent " + f.a.cfg.Name + " needs an answer to go on."
	}
	b, _ := json.Marshal(Question{Kind: "ask_human", Question: text, Agent: f.a.cfg.Name, TaskID: f.st.TaskID})
	return b, nil
}

// answerParts is the message an answer makes: text for a JSON string, a
// data part for any other value.
func answerParts(answer json.RawMessage) proto.ContentParts {
	var s string
	if json.Unmarshal(answer, &s) == nil {
		return proto.ContentParts{proto.NewTextPart(s)}
	}
	var v any
	if json.Unmarshal(answer, &v) != nil {
		return proto.ContentParts{proto.NewTextPart(string(answer))}
	}
	if m, ok := v.(map[string]any); ok {
		return proto.ContentParts{proto.NewDataPart(m)}
	}
	return proto.ContentParts{proto.NewDataPart(v)}
}

// partsText joins a message's or artifact's text parts (and data parts,
// as JSON).
func partsText(parts proto.ContentParts) string {
	var out []string
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case proto.Text:
			out = append(out, string(c))
		case proto.Data:
			if b, err := json.Marshal(c.Value); err == nil {
				out = append(out, string(b))
			}
		}
	}
	return strings.Join(out, "\n")
}

// stateWord is the spec's short name of a state ("input-required").
func stateWord(s proto.TaskState) string {
	w := strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_"))
	if w == "" {
		return "unspecified"
	}
	return strings.ReplaceAll(w, "_", "-")
}

func textErr(text string) error {
	if text == "" {
		return nil
	}
	return errors.New(text)
}

// fail wraps an error from the remote, passing cancellation through.
func (a *Agent) fail(ctx context.Context, op, task string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &RemoteError{Agent: a.cfg.Name, Op: op, TaskID: task, Err: err}
}
