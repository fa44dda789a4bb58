package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/internal/transcript"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// recordThreadCase answers GET /threads/{thread_id}/case: the thread as
// an evaluation case to edit (eval.Record), the one call behind the
// page's "add this thread to a dataset". The server has what a client
// would have to gather: the state's messages (the input, the turns, the
// final answer and the tool trajectory) and, from the transcript, what
// each interrupt asked and the answer it got, so the answers carry the
// interrupt's kind; the checkpoints give the node path, and the
// transcript the tool calls a planner made inside its plan steps (see
// caseTrajectory).
func (a *API) recordThreadCase(w http.ResponseWriter, r *http.Request) {
	t, ok := a.loadThread(w, r)
	if !ok {
		return
	}
	tenant := a.tenant(r)
	g, err := a.threadGraph(r.Context(), tenant, t)
	if errors.Is(err, errNoGraph) {
		wire.NewProblem(http.StatusConflict, "the thread has not run yet: there is nothing to record").Write(w, r)
		return
	}
	if err != nil {
		a.stateFail(w, r, err)
		return
	}
	snap, err := g.GetState(r.Context(), a.stateOpts(tenant, t.ID)...)
	if errors.Is(err, checkpoint.ErrNotFound) {
		wire.NewProblem(http.StatusConflict, "the thread has not run yet: there is nothing to record").Write(w, r)
		return
	}
	if err != nil {
		a.stateFail(w, r, err)
		return
	}
	st, err := toWireState(t.ID, snap)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	th := &eval.Thread{ThreadID: t.ID, CheckpointID: snap.Checkpoint.ID}
	b, err := json.Marshal(st.Values)
	if err == nil {
		err = json.Unmarshal(b, &th.State)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if th.Messages, err = stateMessages(th.State["messages"]); err != nil {
		a.fail(w, r, err)
		return
	}
	turns, err := transcript.Build(r.Context(), a.DB, a.Saver, tenant, t)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	th.Interrupts = answeredInterrupts(turns)
	th.ToolCalls = caseTrajectory(turns)
	if th.Nodes, err = nodePath(r.Context(), g, a.stateOpts(tenant, t.ID)); err != nil {
		a.stateFail(w, r, err)
		return
	}
	c := eval.Record(th)
	if title, ok := t.Metadata["title"].(string); ok && title != "" {
		c.Metadata["title"] = title
	}
	wire.WriteJSON(w, r, http.StatusOK, &c)
}

// stateMessages reads a state's messages (LangChain JSON) as llm
// messages; no messages key is no messages.
func stateMessages(raw json.RawMessage) ([]llm.Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, nil // not a chat: the state is the reference
	}
	out := make([]llm.Message, 0, len(items))
	for i, it := range items {
		m, err := lcmsg.ToLLM(it)
		if err != nil {
			return nil, fmt.Errorf("message %d of the state: %w", i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// answeredInterrupts are the transcript's answers in order: what was
// asked (with its kind, the payload's "kind") and the value sent.
func answeredInterrupts(turns []transcript.Turn) []eval.Interrupt {
	var out []eval.Interrupt
	for _, t := range turns {
		if t.Kind != transcript.KindAnswer || len(t.Answer) == 0 {
			continue
		}
		in := eval.Interrupt{ID: t.InterruptID, Payload: t.Asked, Answer: t.Answer}
		var p struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(t.Asked, &p) == nil {
			in.Kind = p.Kind
		}
		out = append(out, in)
	}
	return out
}
