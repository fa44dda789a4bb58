package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/api/wire"
)

func TestThreadStateAndHistory(t *testing.T) {
	e := newResEnv(t, false)
	var th wire.Thread
	e.must(200, &th, "POST", "/threads", map[string]any{"thread_id": "t1"})

	// No runs yet: an empty state, an empty history.
	var s wire.ThreadState
	e.must(200, &s, "GET", "/threads/t1/state", nil)
	if s.Checkpoint.CheckpointID != nil || len(s.Next) != 0 || s.Checkpoint.ThreadID != "t1" {
		t.Fatalf("empty state %+v", s)
	}
	var hist []wire.ThreadState
	e.must(200, &hist, "POST", "/threads/t1/history", map[string]any{})
	if len(hist) != 0 {
		t.Fatalf("history before any run: %d states", len(hist))
	}
	e.problem(409, "", "POST", "/threads/t1/state", map[string]any{"values": map[string]any{"log": []string{"z"}}})

	// A run that stops at an interrupt.
	e.run(DefaultTenant, "t1", `{"log":["ask"]}`)
	e.must(200, &th, "GET", "/threads/t1", nil)
	if th.Status != "interrupted" || len(th.Interrupts) != 1 {
		t.Fatalf("thread after an interrupt: %+v", th)
	}
	e.must(200, &s, "GET", "/threads/t1/state", nil)
	if strings.Join(s.Next, ",") != "route" || len(s.Tasks) != 1 || len(s.Tasks[0].Interrupts) != 1 || len(s.Interrupts) != 1 {
		t.Fatalf("state at the interrupt: %+v", s)
	}
	if s.Interrupts[0].Value != "what?" || s.Interrupts[0].ID == "" || s.Checkpoint.CheckpointID == nil || s.ParentCheckpoint == nil || s.CreatedAt == nil {
		t.Fatalf("interrupt %+v checkpoint %+v parent %+v", s.Interrupts[0], s.Checkpoint, s.ParentCheckpoint)
	}
	if s.Metadata["source"] != "loop" || s.Metadata["run_id"] == nil {
		t.Fatalf("metadata %v", s.Metadata)
	}
	if got := strings.Join(resStrings(s.Values.(map[string]any)["log"]), ","); got != "ask,hi" {
		t.Fatalf("values %q", got)
	}
	latest := *s.Checkpoint.CheckpointID
	parent := *s.ParentCheckpoint.CheckpointID

	// Select.
	var sel map[string]any
	e.must(200, &sel, "GET", "/threads/t1/state?select=next&select=values.log", nil)
	if len(sel) != 2 || sel["next"] == nil || sel["values"].(map[string]any)["log"] == nil {
		t.Fatalf("select %v", sel)
	}
	e.problem(422, "select", "GET", "/threads/t1/state?select=colour", nil)

	// At a checkpoint, by path and by body.
	var at wire.ThreadState
	e.must(200, &at, "GET", "/threads/t1/state/"+parent, nil)
	if *at.Checkpoint.CheckpointID != parent {
		t.Fatalf("state at %s is %v", parent, at.Checkpoint.CheckpointID)
	}
	e.must(200, &at, "POST", "/threads/t1/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": latest}})
	if *at.Checkpoint.CheckpointID != latest {
		t.Fatalf("state at %s is %v", latest, at.Checkpoint.CheckpointID)
	}
	e.problem(404, "", "GET", "/threads/t1/state/nope", nil)
	e.problem(404, "", "POST", "/threads/t1/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": "nope"}})
	e.problem(422, "/checkpoint/thread_id", "POST", "/threads/t1/state/checkpoint", map[string]any{"checkpoint": map[string]any{"thread_id": "t2"}})
	e.problem(422, "/checkpoint/checkpoint_ns", "POST", "/threads/t1/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_ns": "nowhere:1"}})
	e.problem(404, "", "GET", "/threads/nope/state", nil)
	e.problem(404, "", "GET", "/threads/t1/state/"+latest, nil, resTenantHeader, "other")

	// History: newest first, limit, before, metadata filter.
	e.must(200, &hist, "POST", "/threads/t1/history", map[string]any{})
	// As LangGraph: the pre-input checkpoint, the input applied, greet.
	if len(hist) != 3 || *hist[0].Checkpoint.CheckpointID != latest {
		t.Fatalf("history: %d states, first %v", len(hist), hist[0].Checkpoint.CheckpointID)
	}
	all := len(hist)
	e.must(200, &hist, "POST", "/threads/t1/history", map[string]any{"limit": 1, "before": map[string]any{"configurable": map[string]any{"checkpoint_id": latest}}})
	if len(hist) != 1 || *hist[0].Checkpoint.CheckpointID != parent {
		t.Fatalf("history before the latest: %+v", hist)
	}
	e.must(200, &hist, "POST", "/threads/t1/history", map[string]any{"metadata": map[string]any{"source": "input"}})
	if len(hist) != 1 || hist[0].Metadata["source"] != "input" {
		t.Fatalf("history filtered to the input: %d states", len(hist))
	}
	var slim []map[string]any
	e.must(200, &slim, "POST", "/threads/t1/history", map[string]any{"select": []string{"checkpoint"}})
	if len(slim) != all || len(slim[0]) != 1 {
		t.Fatalf("history with select: %v", slim)
	}
	e.problem(422, "/limit", "POST", "/threads/t1/history", map[string]any{"limit": -1})
	e.problem(404, "", "POST", "/threads/nope/history", map[string]any{})

	// Update the state as a node: the interrupt is dropped, the row follows.
	var res wire.ThreadStateUpdateResult
	e.must(200, &res, "POST", "/threads/t1/state", map[string]any{"values": map[string]any{"log": []string{"edited"}}, "as_node": "route"})
	if res.Checkpoint.CheckpointID == nil || *res.Checkpoint.CheckpointID == latest || res.Checkpoint.ThreadID != "t1" {
		t.Fatalf("update result %+v", res.Checkpoint)
	}
	s = wire.ThreadState{}
	e.must(200, &s, "GET", "/threads/t1/state", nil)
	if len(s.Next) != 0 || len(s.Interrupts) != 0 || strings.Join(resStrings(s.Values.(map[string]any)["log"]), ",") != "ask,hi,edited" {
		t.Fatalf("state after the update: next %v interrupts %v values %v tasks %+v md %v", s.Next, s.Interrupts, s.Values, s.Tasks, s.Metadata)
	}
	th = wire.Thread{}
	e.must(200, &th, "GET", "/threads/t1", nil)
	if th.Status != "idle" || len(th.Interrupts) != 0 {
		t.Fatalf("thread row after the update: %+v", th)
	}
	// A fork from an older checkpoint.
	e.must(200, &res, "POST", "/threads/t1/state", map[string]any{"values": map[string]any{"log": []string{"fork"}}, "checkpoint_id": parent})
	e.must(200, &s, "GET", "/threads/t1/state", nil)
	if s.Metadata["source"] != "fork" {
		t.Fatalf("fork source %v", s.Metadata["source"])
	}
	e.problem(422, "/as_node", "POST", "/threads/t1/state", map[string]any{"values": map[string]any{}, "as_node": "nope"})
	e.problem(422, "/values", "POST", "/threads/t1/state", map[string]any{"values": map[string]any{"colour": "red"}})
	e.problem(422, "/values", "POST", "/threads/t1/state", map[string]any{"values": map[string]any{"log": "not a list"}})
	e.problem(404, "", "POST", "/threads/t1/state", map[string]any{"values": map[string]any{}, "checkpoint_id": "nope"})
	e.problem(404, "", "POST", "/threads/nope/state", map[string]any{})
	e.problem(404, "", "POST", "/threads/t1/state", map[string]any{}, resTenantHeader, "other")

	// PATCH .../state merges metadata over the latest checkpoint's (or a
	// named one's) without a new checkpoint; history filters on it.
	head := *s.Checkpoint.CheckpointID
	e.must(204, nil, "PATCH", "/threads/t1/state", map[string]any{"metadata": map[string]any{"label": "ok", "n": 1}})
	e.must(204, nil, "PATCH", "/threads/t1/state", map[string]any{"metadata": map[string]any{"n": 2}})
	e.must(204, nil, "PATCH", "/threads/t1/state", map[string]any{"metadata": map[string]any{"label": "old"}, "checkpoint_id": parent})
	s = wire.ThreadState{}
	e.must(200, &s, "GET", "/threads/t1/state", nil)
	if *s.Checkpoint.CheckpointID != head || s.Metadata["label"] != "ok" || s.Metadata["n"] != float64(2) || s.Metadata["source"] != "fork" {
		t.Fatalf("state after PATCH: checkpoint %s (was %s), metadata %v", *s.Checkpoint.CheckpointID, head, s.Metadata)
	}
	e.must(200, &at, "GET", "/threads/t1/state/"+parent, nil)
	if at.Metadata["label"] != "old" || at.Metadata["source"] == nil {
		t.Fatalf("state at the patched parent: %v", at.Metadata)
	}
	e.must(200, &hist, "POST", "/threads/t1/history", map[string]any{"metadata": map[string]any{"label": "ok"}})
	if len(hist) != 1 || *hist[0].Checkpoint.CheckpointID != head {
		t.Fatalf("history filtered by a patched label: %d states", len(hist))
	}
	e.must(200, &hist, "POST", "/threads/t1/history", map[string]any{"metadata": map[string]any{"n": 2, "source": "fork"}})
	if len(hist) != 1 {
		t.Fatalf("history filtered by a patched number and a saved source: %d states", len(hist))
	}
	e.must(200, &hist, "POST", "/threads/t1/history", map[string]any{"limit": 1, "metadata": map[string]any{"source": "loop"}})
	if len(hist) != 1 || hist[0].Metadata["source"] != "loop" {
		t.Fatalf("history filtered by a saved key with patches on the thread: %+v", hist)
	}
	e.must(200, &hist, "POST", "/threads/t1/history", map[string]any{"limit": 50})
	labelled := 0
	for _, h := range hist {
		if h.Metadata["label"] != nil {
			labelled++
		}
	}
	if labelled != 2 {
		t.Fatalf("%d states in history carry a label, want 2", labelled)
	}
	e.problem(422, "/metadata", "PATCH", "/threads/t1/state", map[string]any{})
	e.problem(422, "/metadata", "PATCH", "/threads/t1/state", map[string]any{"metadata": "x"})
	e.problem(404, "", "PATCH", "/threads/t1/state", map[string]any{"metadata": map[string]any{}, "checkpoint_id": "nope"})
	e.problem(422, "/checkpoint/thread_id", "PATCH", "/threads/t1/state", map[string]any{"metadata": map[string]any{}, "checkpoint": map[string]any{"thread_id": "t2"}})
	e.problem(404, "", "PATCH", "/threads/nope/state", map[string]any{"metadata": map[string]any{}})
	e.must(200, &th, "POST", "/threads", map[string]any{"thread_id": "fresh"})
	e.problem(409, "", "PATCH", "/threads/fresh/state", map[string]any{"metadata": map[string]any{"a": 1}})

	// A copy keeps the patches; deleting the thread drops them.
	var cp wire.Thread
	e.must(200, &cp, "POST", "/threads/t1/copy", nil)
	e.must(200, &s, "GET", "/threads/"+cp.ThreadID+"/state", nil)
	if s.Metadata["label"] != "ok" {
		t.Fatalf("the copy's state metadata %v", s.Metadata)
	}
	e.must(204, nil, "DELETE", "/threads/t1", nil)
	if md, err := e.api.DB.CheckpointMetadata(t.Context(), DefaultTenant, "t1"); err != nil || len(md) != 0 {
		t.Fatalf("patches of a deleted thread: %v %v", md, err)
	}
}

func TestThreadSubgraphState(t *testing.T) {
	e := newResEnv(t, false)
	e.runOn("nested", DefaultTenant, "n1", `{"log":["x"]}`)
	var s wire.ThreadState
	e.must(200, &s, "GET", "/threads/n1/state?subgraphs=true", nil)
	if len(s.Tasks) != 1 || s.Tasks[0].Name != "sub" || s.Tasks[0].State == nil || s.Tasks[0].Checkpoint == nil {
		t.Fatalf("tasks %+v", s.Tasks)
	}
	sub := s.Tasks[0].State
	if strings.Join(sub.Next, ",") != "ask" || len(sub.Interrupts) != 1 || string(sub.Interrupts[0].ResponseSchema) != `{"type":"string"}` {
		t.Fatalf("subgraph state %+v", sub)
	}
	if len(s.Interrupts) != 1 || len(s.Interrupts[0].Namespace) != 1 {
		t.Fatalf("root interrupts %+v", s.Interrupts)
	}
	ns := s.Tasks[0].Checkpoint.CheckpointNS
	if ns == "" || sub.Checkpoint.CheckpointNS != ns {
		t.Fatalf("namespace %q, subgraph checkpoint %+v", ns, sub.Checkpoint)
	}
	// Without subgraphs=true the task has no state.
	e.must(200, &s, "GET", "/threads/n1/state", nil)
	if s.Tasks[0].State != nil {
		t.Fatal("subgraph state without subgraphs=true")
	}
	// The subgraph's own checkpoints by namespace.
	var at wire.ThreadState
	e.must(200, &at, "POST", "/threads/n1/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_ns": ns}})
	if strings.Join(at.Next, ",") != "ask" {
		t.Fatalf("state in namespace %s: next %v", ns, at.Next)
	}
	var hist []wire.ThreadState
	e.must(200, &hist, "POST", "/threads/n1/history", map[string]any{"checkpoint": map[string]any{"checkpoint_ns": ns}})
	if len(hist) == 0 || hist[0].Checkpoint.CheckpointNS != ns {
		t.Fatalf("subgraph history %+v", hist)
	}
	var subs wire.Subgraphs
	e.must(200, &subs, "GET", "/assistants/nested/subgraphs", nil)
	if _, ok := subs["sub"]; !ok || len(subs) != 1 {
		t.Fatalf("subgraphs %v", subs)
	}
	e.must(200, &subs, "GET", "/assistants/nested/subgraphs/sub", nil)
	if len(subs) != 1 {
		t.Fatalf("subgraphs under sub: %v", subs)
	}
	b, _ := json.Marshal(subs)
	if !strings.Contains(string(b), `"graph_id":"nested"`) {
		t.Fatalf("subgraphs body %s", b)
	}
}
