// Package transcript turns what the server stored about a thread — its
// runs (each run's request, with the answers it resumed with), the runs'
// event logs (what each run asked, its agents' progress, reasoning and
// errors), its checkpoints (which runs are on the thread's current branch)
// and its latest state (the messages) — into one ordered list of turns:
// the conversation's messages, the person's answers, and the timeline of
// what the agent did, interleaved as they happened.
//
// It is the one reconstruction every reader of a thread's history uses:
// the LangGraph API's transcript route (the web page), the OpenAI wire's
// thread messages and the AG-UI wire's messages snapshot. Nothing here is
// kept beside what the run service already stores, so the transcript after
// a reload, on another replica, or through another wire is the same.
package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// Turn kinds.
const (
	// KindMessage is a message of the thread's state (LangChain JSON in
	// Message): the person's input, the agent's replies, tool results.
	KindMessage = "message"
	// KindRun marks where a run began: Status is its status, Fork the
	// checkpoint it ran from when it forked or replayed one.
	KindRun = "run"
	// KindAnswer is the person's (or a client's) answer to something a
	// run waited on: Asked is the interrupt's value, Answer the value sent
	// (command.resume), Text a readable sentence, Outcome its verdict.
	KindAnswer = "answer"
	// KindWait is a run stopping for a person: Interrupts as LangGraph's
	// "__interrupt__" list, Text what was asked.
	KindWait = "wait"
	// KindEvent is an agent's custom event (Data, as sent; the planner's
	// progress: steps, their tool calls and results).
	KindEvent = "event"
	// KindReasoning is a model's reasoning inside a subgraph (a plan
	// step, a sub-agent), whose messages are not in the thread's state:
	// Text, gathered from the run's streamed chunks.
	KindReasoning = "reasoning"
	// KindError is a run's error (Text).
	KindError = "error"
	// KindNote is a message of the agent's working, not a reply to the
	// person: an assistant message with a voice (its LangChain "name",
	// llm.Message.Name, in Author — a reviewer's critique), or a draft
	// that such a voice answered and a later reply of the same run
	// replaced (Author ""). Message holds it, Text its text. Wires that
	// list the conversation's messages leave notes out.
	KindNote = "note"
)

// Turn is one entry of a thread's transcript.
type Turn struct {
	Kind  string    `json:"kind"`
	RunID string    `json:"run_id,omitempty"`
	At    time.Time `json:"at"`
	// Namespace is the subgraph an event, a reasoning block or a wait came
	// from ("" for the graph's top level).
	Namespace string `json:"ns,omitempty"`

	Message json.RawMessage `json:"message,omitempty"`

	Status string `json:"status,omitempty"`
	Fork   string `json:"checkpoint_id,omitempty"`

	InterruptID string          `json:"interrupt_id,omitempty"`
	Asked       json.RawMessage `json:"asked,omitempty"`
	Answer      json.RawMessage `json:"answer,omitempty"`
	Outcome     string          `json:"outcome,omitempty"`
	Text        string          `json:"text,omitempty"`
	Author      string          `json:"author,omitempty"`

	Interrupts json.RawMessage `json:"interrupts,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`

	msgID  string // a top-level reasoning block's message
	inputN int    // a run's input: how many messages it adds
}

// Limits of one transcript, so a long thread costs bounded memory: the
// newest MaxRuns runs, the first MaxEvents events of each run's log, the
// newest MaxCheckpoints checkpoints for the branch, and MaxReasoning bytes
// of one reasoning block.
const (
	MaxRuns        = 200
	MaxEvents      = 20000
	MaxCheckpoints = 5000
	MaxReasoning   = 64 << 10
)

// Store is what a transcript reads: the run store and its event logs.
type Store interface {
	ListRuns(ctx context.Context, tenant, threadID string, q db.RunQuery) ([]db.Run, error)
	ReadEvents(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, error)
}

// Build returns the transcript of thread th (its row, with the latest
// state's values) of tenant. saver, when not nil, limits the runs to the
// thread's current branch: a run that wrote checkpoints, none of them on
// the path from the thread's latest checkpoint back to its first, was on a
// branch left by a fork and is not shown.
func Build(ctx context.Context, st Store, saver checkpoint.Saver, tenant string, th db.Thread) ([]Turn, error) {
	list, err := st.ListRuns(ctx, tenant, th.ID, db.RunQuery{Limit: MaxRuns})
	if err != nil {
		return nil, err
	}
	slices.Reverse(list) // oldest first
	var onBranch, wrote map[string]bool
	if saver != nil {
		onBranch, wrote, err = branch(ctx, saver, runs.ThreadKey(tenant, th.ID))
		if err != nil {
			return nil, err
		}
	}
	b := &builder{pending: map[string]json.RawMessage{}}
	for _, r := range list {
		if wrote[r.ID] && !onBranch[r.ID] {
			continue
		}
		log, err := runLog(ctx, st, tenant, r)
		if err != nil {
			return nil, err
		}
		b.run(r, log)
	}
	return notes(b.merge(stateMessages(th.Values))), nil
}

// branch reads the thread's root checkpoints: the runs that wrote one on
// the path from the latest back to the first, and the runs that wrote any.
func branch(ctx context.Context, saver checkpoint.Saver, thread string) (on, wrote map[string]bool, err error) {
	type cp struct{ parent, run string }
	all := map[string]cp{}
	head := ""
	n := 0
	for t, err := range saver.List(ctx, checkpoint.Ref{ThreadID: thread}, checkpoint.ListOptions{Limit: MaxCheckpoints}) {
		if err != nil {
			if errors.Is(err, checkpoint.ErrNotFound) {
				break
			}
			return nil, nil, err
		}
		if n == 0 {
			head = t.Ref.ID
		}
		n++
		all[t.Ref.ID] = cp{t.Metadata.Parent, t.Metadata.RunID}
	}
	on, wrote = map[string]bool{}, map[string]bool{}
	for _, c := range all {
		wrote[c.run] = true
	}
	for id := head; id != ""; {
		c, ok := all[id]
		if !ok {
			break
		}
		on[c.run] = true
		delete(all, id) // a cycle cannot loop
		id = c.parent
	}
	return on, wrote, nil
}

// builder gathers the runs' turns in order; message turns are markers
// (Message holds only the ID) until merge puts the state's messages in.
type builder struct {
	turns   []Turn
	pending map[string]json.RawMessage // interrupt ID -> its wire entry, waiting for an answer
	order   []string                   // pending IDs in the order asked
	seen    map[string]bool            // message IDs already marked
	hops    hops                       // the remote calls' events, folded
}

func (b *builder) add(t Turn) { b.turns = append(b.turns, t) }

// run adds one run: where it began, the answers it resumed with, then its
// log in order (read as parseLog reads it).
func (b *builder) run(r db.Run, log []logItem) {
	var kw runs.Kwargs
	_ = json.Unmarshal(r.Kwargs, &kw) // a run whose request does not decode still shows its log
	b.add(Turn{Kind: KindRun, RunID: r.ID, At: r.CreatedAt, Status: string(r.Status), Fork: kw.CheckpointID})
	if kw.Command != nil && len(kw.Command.Resume) > 0 {
		b.answers(r, kw.Command.Resume)
	} else if kw.Input != nil && !bytes.Equal(bytes.TrimSpace(kw.Input), []byte("null")) || kw.CheckpointID != "" {
		// New input (or a fork) leaves what waited unanswered.
		b.pending, b.order = map[string]json.RawMessage{}, nil
	}
	if n := inputMessages(kw.Input); n > 0 {
		// The input's messages come first, whatever the log shows of them
		// (a run logged without values has no event that carries them).
		b.add(Turn{Kind: KindMessage, RunID: r.ID, At: r.CreatedAt, inputN: n})
	}
	for _, it := range log {
		switch it.kind {
		case KindWait:
			b.hopWait(r.ID, b.wait(r.ID, it.at, it.data))
		case KindMessage:
			b.mark(r.ID, it.at, it.ids)
		default: // an event, a reasoning block, an error
			if it.kind == KindEvent && b.hopEvent(r.ID, it.at, it.ns, it.data) {
				continue
			}
			b.add(Turn{Kind: it.kind, RunID: r.ID, At: it.at, Namespace: it.ns, Data: it.data, Text: it.text, msgID: it.msgID})
		}
	}
	if r.Status == db.RunError && r.Error != "" && !b.hasError(r.ID) {
		b.add(Turn{Kind: KindError, RunID: r.ID, At: r.UpdatedAt, Text: r.Error})
	}
}

// logItem is what a transcript keeps of a run's event log, in order: a
// wait (data: the "__interrupt__" list), the IDs of messages the log
// shows (kind KindMessage), a custom event, a reasoning block or an
// error. It depends on the log alone, not on the runs before it, so a
// finished run's items can be kept (see cache.go).
type logItem struct {
	kind  string
	at    time.Time
	ns    string
	data  json.RawMessage
	ids   []string
	text  string
	msgID string
}

// parseLog reads a run's event log into its items.
func parseLog(evs []db.Event) []logItem {
	var out []logItem
	reasoning := map[string]int{} // namespaced message ID -> index of its reasoning item
	for _, ev := range evs {
		mode, ns, _ := cutNS(ev.Event)
		switch mode {
		case runs.ModeValues, runs.ModeUpdates:
			if ns != "" {
				continue
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(ev.Data, &obj) != nil {
				continue
			}
			if in, ok := obj["__interrupt__"]; ok {
				out = append(out, logItem{kind: KindWait, at: ev.CreatedAt, data: in})
				continue
			}
			var ids []string
			if mode == runs.ModeValues {
				ids = messageIDs(obj["messages"])
			} else {
				for _, u := range obj {
					var upd map[string]json.RawMessage
					if json.Unmarshal(u, &upd) == nil {
						ids = append(ids, messageIDs(upd["messages"])...)
					}
				}
			}
			if len(ids) > 0 {
				out = append(out, logItem{kind: KindMessage, at: ev.CreatedAt, ids: ids})
			}
		case runs.ModeCustom:
			out = append(out, logItem{kind: KindEvent, at: ev.CreatedAt, ns: ns, data: ev.Data})
		case "messages":
			id, text := reasoningOf(ev.Data)
			if text == "" {
				continue
			}
			key := ns + "\x00" + id
			if i, ok := reasoning[key]; ok {
				if len(out[i].text) < MaxReasoning {
					out[i].text += text
				}
				continue
			}
			reasoning[key] = len(out)
			out = append(out, logItem{kind: KindReasoning, at: ev.CreatedAt, ns: ns, text: text, msgID: id})
		case "error":
			var e struct {
				Message string `json:"message"`
				Error   string `json:"error"`
			}
			_ = json.Unmarshal(ev.Data, &e)
			out = append(out, logItem{kind: KindError, at: ev.CreatedAt, text: cmpOr(e.Message, e.Error, "the run failed")})
		}
	}
	return out
}

// messageIDs reads the IDs of a list of messages (or of one message).
func messageIDs(msgs json.RawMessage) []string {
	var list []struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(msgs, &list) != nil {
		return nil
	}
	ids := make([]string, 0, len(list))
	for _, m := range list {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

func (b *builder) hasError(runID string) bool {
	for i := len(b.turns) - 1; i >= 0 && b.turns[i].RunID == runID; i-- {
		if b.turns[i].Kind == KindError {
			return true
		}
	}
	return false
}

// wait records a run stopping for a person; its interrupts wait for the
// answers of a later run. It returns what was asked.
func (b *builder) wait(runID string, at time.Time, list json.RawMessage) string {
	var ins []map[string]json.RawMessage
	if json.Unmarshal(list, &ins) != nil {
		return ""
	}
	b.pending, b.order = map[string]json.RawMessage{}, nil
	texts := make([]string, 0, len(ins))
	for _, in := range ins {
		var id string
		_ = json.Unmarshal(in["id"], &id)
		if id == "" {
			continue
		}
		raw, _ := json.Marshal(in)
		b.pending[id] = raw
		b.order = append(b.order, id)
		texts = append(texts, Asked(in["value"]))
	}
	b.add(Turn{Kind: KindWait, RunID: runID, At: at, Interrupts: list, Text: joinLines(texts)})
	return joinLines(texts)
}

// answers adds the answers a run resumed with: a map by interrupt ID, or
// one value for the one interrupt that waited.
func (b *builder) answers(r db.Run, resume json.RawMessage) {
	var byID map[string]json.RawMessage
	if json.Unmarshal(resume, &byID) == nil && len(byID) > 0 && b.allPending(byID) {
		for _, id := range slices.Clone(b.order) { // answer removes from b.order
			if v, ok := byID[id]; ok {
				b.answer(r, id, v)
			}
		}
		return
	}
	id := ""
	if len(b.order) > 0 {
		id = b.order[0]
	}
	b.answer(r, id, resume)
}

func (b *builder) allPending(m map[string]json.RawMessage) bool {
	for id := range m {
		if _, ok := b.pending[id]; !ok {
			return false
		}
	}
	return true
}

func (b *builder) answer(r db.Run, id string, v json.RawMessage) {
	var in struct {
		Value json.RawMessage `json:"value"`
	}
	if raw, ok := b.pending[id]; ok {
		_ = json.Unmarshal(raw, &in)
		delete(b.pending, id)
		b.order = slices.DeleteFunc(b.order, func(s string) bool { return s == id })
	}
	text, outcome := Describe(in.Value, v)
	b.add(Turn{Kind: KindAnswer, RunID: r.ID, At: r.CreatedAt, InterruptID: id, Asked: in.Value, Answer: v, Text: text, Outcome: outcome})
}

// mark notes, at this point of the log, the messages first seen here.
func (b *builder) mark(runID string, at time.Time, ids []string) {
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	for _, id := range ids {
		if b.seen[id] {
			continue
		}
		b.seen[id] = true
		raw, _ := json.Marshal(id)
		b.add(Turn{Kind: KindMessage, RunID: runID, At: at, Message: raw})
	}
}

// merge puts the state's messages (the truth of what the thread holds) in
// place of the markers: each where the log first showed it, after the
// state's earlier messages; a marker of a message the state no longer
// holds (removed, or on another branch) is dropped, and state messages no
// log showed (written by a state update, or logged in no mode that shows
// them) follow the message before them.
func (b *builder) merge(state []json.RawMessage) []Turn {
	index := map[string]int{}
	for i, m := range state {
		if id := idOf(m); id != "" {
			if _, dup := index[id]; !dup {
				index[id] = i
			}
		}
	}
	out := make([]Turn, 0, len(b.turns)+len(state))
	next := 0 // the first state message not yet placed
	var at time.Time
	var runID string
	emitTo := func(end int) {
		for ; next < end; next++ {
			out = append(out, Turn{Kind: KindMessage, RunID: runID, At: at, Message: state[next]})
		}
	}
	for _, t := range b.turns {
		if t.Kind == KindReasoning && t.Namespace == "" {
			if i, ok := index[t.msgID]; ok && hasReasoning(state[i]) {
				continue // the message shows it
			}
		}
		if t.Kind != KindMessage {
			out = append(out, t)
			continue
		}
		if t.inputN > 0 {
			at, runID = t.At, t.RunID
			emitTo(min(next+t.inputN, len(state)))
			continue
		}
		var id string
		_ = json.Unmarshal(t.Message, &id)
		i, ok := index[id]
		if !ok || i < next {
			continue
		}
		at, runID = t.At, t.RunID
		emitTo(i + 1)
	}
	emitTo(len(state))
	return out
}

// inputMessages counts the messages a run's input adds (removals aside).
func inputMessages(input json.RawMessage) int {
	var in struct {
		Messages []struct {
			Type string `json:"type"`
		} `json:"messages"`
	}
	if json.Unmarshal(input, &in) != nil {
		return 0
	}
	n := 0
	for _, m := range in.Messages {
		if m.Type != "remove" {
			n++
		}
	}
	return n
}

func stateMessages(values json.RawMessage) []json.RawMessage {
	var v struct {
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(values, &v)
	return v.Messages
}

// hasReasoning reports whether a state message carries its reasoning.
func hasReasoning(m json.RawMessage) bool {
	var v struct {
		Kwargs struct {
			Reasoning string `json:"reasoning_content"`
		} `json:"additional_kwargs"`
	}
	_ = json.Unmarshal(m, &v)
	return v.Kwargs.Reasoning != ""
}

func idOf(m json.RawMessage) string {
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(m, &v)
	return v.ID
}

// reasoningOf reads a messages-tuple event's chunk: its ID and reasoning.
func reasoningOf(data json.RawMessage) (id, text string) {
	var pair []json.RawMessage
	if json.Unmarshal(data, &pair) != nil || len(pair) == 0 {
		return "", ""
	}
	var c struct {
		ID     string `json:"id"`
		Kwargs struct {
			Reasoning string `json:"reasoning_content"`
		} `json:"additional_kwargs"`
	}
	_ = json.Unmarshal(pair[0], &c)
	return c.ID, c.Kwargs.Reasoning
}

// cutNS splits an event name "mode|namespace".
func cutNS(name string) (mode, ns string, found bool) {
	for i := 0; i < len(name); i++ {
		if name[i] == '|' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}

func cmpOr(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func joinLines(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "\n"
		}
		out += x
	}
	return out
}

// Answers returns the answer turns of one run: what it resumed with,
// paired with what the run before it waited on. It reads two runs' worth
// (the run's request and the previous run's log), not the whole thread, so
// a wire can send a run's answers as the run starts.
func Answers(ctx context.Context, st Store, tenant, threadID, runID string) ([]Turn, error) {
	list, err := st.ListRuns(ctx, tenant, threadID, db.RunQuery{Limit: MaxRuns})
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(r db.Run) bool { return r.ID == runID }) // newest first
	if i < 0 {
		return nil, nil
	}
	b := &builder{pending: map[string]json.RawMessage{}}
	if i+1 < len(list) {
		prev := list[i+1]
		log, err := runLog(ctx, st, tenant, prev)
		if err != nil {
			return nil, err
		}
		b.run(prev, log)
	}
	b.turns = nil
	b.run(list[i], nil)
	var out []Turn
	for _, t := range b.turns {
		if t.Kind == KindAnswer {
			out = append(out, t)
		}
	}
	return out, nil
}
