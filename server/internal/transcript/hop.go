package transcript

import (
	"encoding/json"
	"strings"
	"time"
)

// KindHop is a call to a remote agent (Hop): the custom events a run's
// remote call streamed (tool/a2a's "remote_status" and "remote_artifact",
// tool/remotegraph's "remote_run", "remote_node", "remote_message" and
// "remote_custom"), folded into one entry per remote task
// or thread and run of the local thread, placed where its first event was.
const KindHop = "hop"

// Hop is what a transcript shows of one call to a remote agent: which
// agent, over which protocol, which remote task (A2A) or thread and run
// (LangGraph API), the status updates it streamed, the question it asked
// and how it ended.
type Hop struct {
	Agent string `json:"agent"`
	// Via is "a2a" or "langgraph".
	Via       string `json:"via"`
	TaskID    string `json:"task_id,omitempty"`
	ContextID string `json:"context_id,omitempty"`
	ThreadID  string `json:"thread_id,omitempty"`
	// RunID is the remote run of the latest update (LangGraph API).
	RunID string `json:"run_id,omitempty"`
	// State is the latest update's state ("working", "input-required",
	// "completed", "failed"... for A2A; "created", "success",
	// "interrupted", "error"... for the LangGraph API).
	State   string      `json:"state"`
	Updates []HopUpdate `json:"updates"`
	// Question is what the remote asked, when it stopped for a person.
	Question string `json:"question,omitempty"`
	// Outcome is the remote's answer so far: its artifacts' text (A2A),
	// its latest streamed message (LangGraph API).
	Outcome string `json:"outcome,omitempty"`
}

// HopUpdate is one status update of a hop.
type HopUpdate struct {
	State string    `json:"state"`
	Text  string    `json:"text,omitempty"`
	RunID string    `json:"run_id,omitempty"`
	At    time.Time `json:"at"`
}

// hopEvent reads the fields of a remote call's custom event.
type hopEvent struct {
	Kind      string `json:"kind"`
	Agent     string `json:"agent"`
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id"`
	State     string `json:"state"`
	Text      string `json:"text"`
	Append    bool   `json:"append"`
	ThreadID  string `json:"thread_id"`
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	// Node and Data: tool/remotegraph's streamed "remote_node" and
	// "remote_custom".
	Node string          `json:"node"`
	Data json.RawMessage `json:"data"`
}

// MaxHopUpdates bounds the status updates one hop keeps (the latest
// replaces the last beyond it), and MaxHopText the bytes of its outcome.
const (
	MaxHopUpdates = 200
	MaxHopText    = 64 << 10
)

// asHop reads a custom event's data as a remote call's event, and the key
// of the hop it belongs to (agent and remote task or thread).
func asHop(data json.RawMessage) (hopEvent, string, bool) {
	var e hopEvent
	if json.Unmarshal(data, &e) != nil || e.Agent == "" {
		return e, "", false
	}
	switch e.Kind {
	case "remote_status", "remote_artifact":
		return e, "a2a\x00" + e.Agent + "\x00" + e.TaskID, true
	case "remote_run", "remote_node", "remote_message", "remote_custom":
		if e.ThreadID == "" {
			return e, "", false
		}
		return e, "langgraph\x00" + e.Agent + "\x00" + e.ThreadID, true
	}
	return e, "", false
}

// hops folds the remote calls' events of the thread's runs: one hop per
// key in each local run; an update an earlier run already showed (a node
// resumed after the person answered re-emits its finished rounds) is not
// shown twice.
type hops struct {
	run  string
	at   map[string]int             // key -> index of the run's hop turn in builder.turns
	last int                        // index of the run's latest hop turn, -1 for none
	seen map[string]map[string]bool // key -> updates shown
	hop  map[int]*Hop
}

// hopEvent folds one event into its hop; it reports false for events that
// are not a remote call's.
func (b *builder) hopEvent(runID string, at time.Time, ns string, data json.RawMessage) bool {
	e, key, ok := asHop(data)
	if !ok {
		return false
	}
	h := &b.hops
	if h.seen == nil {
		h.seen, h.hop = map[string]map[string]bool{}, map[int]*Hop{}
	}
	if h.run != runID {
		h.run, h.at, h.last = runID, map[string]int{}, -1
	}
	up := HopUpdate{State: e.State, Text: firstLine(e.Text), At: at}
	switch e.Kind {
	case "remote_run":
		up = HopUpdate{State: e.Status, RunID: e.RunID, At: at}
	case "remote_node":
		up = HopUpdate{State: "working", Text: "node " + e.Node + " finished", RunID: e.RunID, At: at}
	case "remote_custom":
		t := e.Text
		if len(e.Data) > 0 {
			t = string(e.Data)
		}
		up = HopUpdate{State: "working", Text: firstLine(t), RunID: e.RunID, At: at}
	}
	sig := e.Kind + "\x00" + up.State + "\x00" + up.Text + "\x00" + up.RunID
	if e.Kind == "remote_artifact" {
		sig += "\x00" + boolWord(e.Append)
	}
	if h.seen[key] == nil {
		h.seen[key] = map[string]bool{}
	}
	if e.Kind != "remote_message" { // chunks repeat their words; a message is folded whole
		if h.seen[key][sig] {
			return true
		}
		h.seen[key][sig] = true
	}
	i, ok := h.at[key]
	if !ok {
		hp := &Hop{Agent: e.Agent, Via: "a2a", TaskID: e.TaskID, ContextID: e.ContextID}
		if e.Kind == "remote_run" {
			hp = &Hop{Agent: e.Agent, Via: "langgraph", ThreadID: e.ThreadID}
		}
		i = len(b.turns)
		h.at[key] = i
		h.hop[i] = hp
		b.add(Turn{Kind: KindHop, RunID: runID, At: at, Namespace: ns})
	}
	h.last = i
	hp := h.hop[i]
	if e.Kind == "remote_artifact" || e.Kind == "remote_message" {
		if !e.Append {
			hp.Outcome = ""
		}
		if len(hp.Outcome) < MaxHopText {
			hp.Outcome += e.Text
		}
	} else {
		if up.RunID != "" {
			hp.RunID = up.RunID
		}
		hp.State = up.State
		if waiting(up.State) && up.Text != "" {
			hp.Question = up.Text
		}
		if len(hp.Updates) < MaxHopUpdates {
			hp.Updates = append(hp.Updates, up)
		} else {
			hp.Updates[len(hp.Updates)-1] = up
		}
	}
	b.turns[i].Data, _ = json.Marshal(hp)
	b.turns[i].Text = hp.sentence()
	return true
}

// hopWait gives the run's latest hop, when it stopped for a person, the
// question the local run asked for it: the remote's question as the local
// wires read it (a remote's status text may carry the question's payload
// after it).
func (b *builder) hopWait(runID, text string) {
	h := &b.hops
	if h.run != runID || h.last < 0 || text == "" {
		return
	}
	hp := h.hop[h.last]
	if hp == nil || !waiting(hp.State) {
		return
	}
	hp.Question = text
	b.turns[h.last].Data, _ = json.Marshal(hp)
	b.turns[h.last].Text = hp.sentence()
}

// waiting reports whether a remote state is a stop for a person.
func waiting(state string) bool {
	return state == "input-required" || state == "interrupted" || state == "auth-required"
}

// sentence is the hop in words: "Asked remote agent NAME (A2A task ID):
// STATE".
func (hp *Hop) sentence() string {
	s := "Asked remote agent " + hp.Agent
	switch {
	case hp.Via == "langgraph":
		s += " (LangGraph thread " + hp.ThreadID
		if hp.RunID != "" {
			s += ", run " + hp.RunID
		}
		s += ")"
	case hp.TaskID != "":
		s += " (A2A task " + hp.TaskID + ")"
	}
	if hp.State != "" {
		s += ": " + hp.State
	}
	if hp.Question != "" {
		s += " — asked: " + hp.Question
	}
	return s
}

// firstLine is a status text's first line, at most 500 bytes: the
// sentence, without the data an A2A agent may append to it.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 500 {
		s = strings.ToValidUTF8(s[:500], "") + "…"
	}
	return s
}

func boolWord(b bool) string {
	if b {
		return "append"
	}
	return ""
}
