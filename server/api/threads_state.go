package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// A thread's state is read through the graph of the assistant that runs
// it: metadata.assistant_id or metadata.graph_id when the client set them
// (the SDK does), else the assistant of the thread's latest run.

// errNoGraph: the thread has no runs and no graph in its metadata.
var errNoGraph = errors.New("the thread has no graph yet: run it once, or create it with metadata.graph_id")

// graphForMetadata finds the assistant metadata names (assistant_id, or
// graph_id's oldest assistant).
func (a *API) graphForMetadata(ctx context.Context, tenant string, md db.Metadata) (db.Assistant, bool) {
	if id, ok := md["assistant_id"].(string); ok && id != "" {
		if as, err := a.DB.GetAssistant(ctx, tenant, id); err == nil {
			return as, true
		}
	}
	if gid, ok := md["graph_id"].(string); ok && gid != "" {
		found, err := a.DB.SearchAssistants(ctx, tenant, db.AssistantQuery{GraphID: gid, Query: db.Query{Limit: 1, SortBy: "created_at", SortOrder: "asc"}})
		if err == nil && len(found) > 0 {
			return found[0], true
		}
	}
	return db.Assistant{}, false
}

// threadGraph returns the compiled graph of thread t. When the thread's
// latest run named an assistant version (and the metadata names that
// run's assistant, or none), the state is that version's graph's: the
// graph that wrote it, not the assistant's latest.
func (a *API) threadGraph(ctx context.Context, tenant string, t db.Thread) (*graph.Graph, error) {
	rs, err := a.DB.ListRuns(ctx, tenant, t.ID, db.RunQuery{Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(rs) > 0 && rs[0].AssistantVersion > 0 {
		if id, _ := t.Metadata["assistant_id"].(string); id == "" || id == rs[0].AssistantID {
			as, err := runs.AssistantVersion(ctx, a.DB, tenant, rs[0].AssistantID, rs[0].AssistantVersion)
			if err == nil {
				return a.Graphs.Graph(ctx, tenant, as)
			}
			if !errors.Is(err, db.ErrNotFound) {
				return nil, err
			}
		}
	}
	as, ok := a.graphForMetadata(ctx, tenant, t.Metadata)
	if !ok {
		if len(rs) == 0 {
			return nil, errNoGraph
		}
		if as, err = a.DB.GetAssistant(ctx, tenant, rs[0].AssistantID); err != nil {
			return nil, err
		}
	}
	return a.Graphs.Graph(ctx, tenant, as)
}

// stateOpts are the options that read or edit a tenant's thread.
func (a *API) stateOpts(tenant, thread string) []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(a.Saver), graph.WithThread(runs.ThreadKey(tenant, thread))}
}

// emptyState is the state of a thread without checkpoints.
func emptyState(thread string) wire.ThreadState {
	return wire.ThreadState{Values: map[string]any{}, Next: []string{}, Tasks: []wire.ThreadTask{}, Metadata: wire.Metadata{},
		Checkpoint: wire.Checkpoint{ThreadID: thread}, Interrupts: []wire.Interrupt{}}
}

func wireCheckpoint(thread string, ref checkpoint.Ref) *wire.Checkpoint {
	if ref.ID == "" {
		return nil
	}
	id := ref.ID
	return &wire.Checkpoint{ThreadID: thread, CheckpointNS: ref.Namespace, CheckpointID: &id}
}

func wireInterrupt(in graph.InterruptInfo) wire.Interrupt {
	var v any
	if len(in.Payload) > 0 {
		v = in.Payload
	}
	out := wire.Interrupt{ID: in.ID, Value: v, ResponseSchema: in.Schema}
	if in.Namespace != "" {
		out.Namespace = strings.Split(in.Namespace, "|")
	}
	return out
}

// toWireState shows a snapshot in LangGraph's ThreadState shape.
func toWireState(thread string, s *graph.Snapshot) (wire.ThreadState, error) {
	lc := runs.LCWire{}
	vals, err := lc.State(s.Values)
	if err != nil {
		return wire.ThreadState{}, err
	}
	created := s.Created.UTC()
	out := wire.ThreadState{Values: vals, Next: s.Next, Checkpoint: *wireCheckpoint(thread, s.Checkpoint),
		ParentCheckpoint: wireCheckpoint(thread, s.Parent), CreatedAt: &created, Tasks: []wire.ThreadTask{}, Interrupts: []wire.Interrupt{}}
	if out.Next == nil {
		out.Next = []string{}
	}
	md := wire.Metadata{"source": string(s.Metadata.Source), "step": s.Metadata.Step}
	if s.Metadata.RunID != "" {
		md["run_id"] = s.Metadata.RunID
	}
	for k, v := range s.Metadata.Extra {
		md[k] = v
	}
	out.Metadata = md
	for _, in := range s.Interrupts {
		out.Interrupts = append(out.Interrupts, wireInterrupt(in))
	}
	for _, t := range s.Tasks {
		wt := wire.ThreadTask{ID: t.ID, Name: t.Node, Interrupts: []wire.Interrupt{}}
		if t.Error != "" {
			e := t.Error
			wt.Error = &e
		}
		for _, in := range t.Interrupts {
			wt.Interrupts = append(wt.Interrupts, wireInterrupt(in))
		}
		if t.Finished && len(t.Writes) > 0 {
			if res, err := lc.Update(t.Writes); err == nil {
				wt.Result = res
			}
		}
		if t.Namespace != "" {
			wt.Checkpoint = &wire.Checkpoint{ThreadID: thread, CheckpointNS: t.Namespace}
			if sub := s.Subgraphs[t.Namespace]; sub != nil {
				ss, err := toWireState(thread, sub)
				if err != nil {
					return out, err
				}
				wt.State = &ss
			}
		}
		out.Tasks = append(out.Tasks, wt)
	}
	return out, nil
}

// selectState limits a state to the fields named ("values.<key>" keeps
// one state key); no names keep it whole.
func selectState(s wire.ThreadState, sel []wire.StateSelectField) any {
	if len(sel) == 0 {
		return s
	}
	var fields, keys []string
	for _, f := range sel {
		if k, ok := strings.CutPrefix(string(f), "values."); ok {
			keys = append(keys, k)
			continue
		}
		fields = append(fields, string(f))
	}
	if len(keys) > 0 {
		fields = append(fields, "values")
		if raw, ok := s.Values.(json.RawMessage); ok {
			var all map[string]json.RawMessage
			if json.Unmarshal(raw, &all) == nil {
				kept := map[string]json.RawMessage{}
				for _, k := range keys {
					if v, ok := all[k]; ok {
						kept[k] = v
					}
				}
				s.Values = kept
			}
		}
	}
	return selectFields(s, fields)
}

// readState answers the thread's state at checkpoint id ("" the latest)
// in namespace ns.
func (a *API) readState(w http.ResponseWriter, r *http.Request, t db.Thread, id, ns string, subgraphs bool, sel []wire.StateSelectField) {
	tenant := a.tenant(r)
	g, err := a.threadGraph(r.Context(), tenant, t)
	if errors.Is(err, errNoGraph) && id == "" && ns == "" {
		wire.WriteJSON(w, r, http.StatusOK, selectState(emptyState(t.ID), sel))
		return
	}
	if err != nil {
		a.stateFail(w, r, err)
		return
	}
	opts := a.stateOpts(tenant, t.ID)
	if id != "" {
		opts = append(opts, graph.WithCheckpointID(id))
	}
	if ns != "" {
		opts = append(opts, graph.WithNamespace(ns))
	}
	if subgraphs {
		opts = append(opts, graph.WithSubgraphStates())
	}
	snap, err := g.GetState(r.Context(), opts...)
	if errors.Is(err, checkpoint.ErrNotFound) {
		if id != "" {
			wire.NotFound("checkpoint", id).Write(w, r)
			return
		}
		wire.WriteJSON(w, r, http.StatusOK, selectState(emptyState(t.ID), sel))
		return
	}
	if err != nil {
		a.stateFail(w, r, err)
		return
	}
	out, err := toWireState(t.ID, snap)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	over, err := a.overlays(r.Context(), tenant, t.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	applyOverlay(&out, over)
	wire.WriteJSON(w, r, http.StatusOK, selectState(out, sel))
}

// stateFail answers the errors of reading a thread's graph or state.
func (a *API) stateFail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errNoGraph):
		wire.Conflict(err.Error()).Write(w, r)
	case strings.Contains(err.Error(), "graph: namespace"):
		wire.Invalid(wire.FieldError{Pointer: "/checkpoint/checkpoint_ns", Detail: trimGraphPrefix(err.Error())}).Write(w, r)
	default:
		a.fail(w, r, err)
	}
}

func (a *API) getThreadState(w http.ResponseWriter, r *http.Request) {
	t, ok := a.loadThread(w, r)
	if !ok {
		return
	}
	if q, ok := decodeQuery[wire.ThreadStateQuery](w, r); ok {
		a.readState(w, r, t, "", "", q.Subgraphs, q.Select)
	}
}

func (a *API) getThreadStateAt(w http.ResponseWriter, r *http.Request) {
	t, ok := a.loadThread(w, r)
	if !ok {
		return
	}
	id, ok := pathID(w, r, "checkpoint_id")
	if !ok {
		return
	}
	if q, ok := decodeQuery[wire.ThreadStateQuery](w, r); ok {
		a.readState(w, r, t, id, "", q.Subgraphs, q.Select)
	}
}

func (a *API) getThreadStateAtCheckpoint(w http.ResponseWriter, r *http.Request) {
	t, ok := a.loadThread(w, r)
	if !ok {
		return
	}
	b, ok := decodeBody[wire.ThreadStateAt](a, w, r)
	if !ok {
		return
	}
	if b.Checkpoint.ThreadID != "" && b.Checkpoint.ThreadID != t.ID {
		wire.Invalid(wire.FieldError{Pointer: "/checkpoint/thread_id", Detail: fmt.Sprintf("names thread %q, but the path names %q; leave it out or make them agree", b.Checkpoint.ThreadID, t.ID)}).Write(w, r)
		return
	}
	a.readState(w, r, t, b.Checkpoint.CheckpointID, b.Checkpoint.CheckpointNS, b.Subgraphs, b.Select)
}

func (a *API) getThreadHistory(w http.ResponseWriter, r *http.Request) {
	t, ok := a.loadThread(w, r)
	if !ok {
		return
	}
	b, ok := decodeBody[wire.ThreadHistory](a, w, r)
	if !ok {
		return
	}
	tenant := a.tenant(r)
	g, err := a.threadGraph(r.Context(), tenant, t)
	if errors.Is(err, errNoGraph) {
		wire.WriteJSON(w, r, http.StatusOK, []wire.ThreadState{})
		return
	}
	if err != nil {
		a.stateFail(w, r, err)
		return
	}
	over, err := a.overlays(r.Context(), tenant, t.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	limit := wire.LimitOr(b.Limit, wire.DefaultLimit)
	lo := checkpoint.ListOptions{Limit: limit}
	if b.Before != nil {
		if id, ok := b.Before.Configurable["checkpoint_id"].(string); ok {
			lo.Before = id
		}
	}
	// With patched metadata on the thread, the saver cannot filter by
	// metadata: the states are filtered here, after the patches are laid
	// over them.
	filterHere := len(b.Metadata) > 0 && len(over) > 0
	if filterHere {
		lo.Limit = 0
	} else if len(b.Metadata) > 0 {
		lo.Filter = map[string]string{}
		for k, v := range b.Metadata {
			if s, ok := v.(string); ok {
				lo.Filter[k] = s
			} else {
				lo.Filter[k] = fmt.Sprint(v)
			}
		}
	}
	opts := a.stateOpts(tenant, t.ID)
	if b.Checkpoint != nil && b.Checkpoint.CheckpointNS != "" {
		opts = append(opts, graph.WithNamespace(b.Checkpoint.CheckpointNS))
	}
	out := []any{}
	for snap, err := range g.History(r.Context(), lo, opts...) {
		if err != nil {
			a.stateFail(w, r, err)
			return
		}
		s, err := toWireState(t.ID, snap)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		applyOverlay(&s, over)
		if filterHere && !metadataMatches(s.Metadata, b.Metadata) {
			continue
		}
		out = append(out, selectState(s, b.Select))
		if len(out) == limit {
			break
		}
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

// busy reports whether the thread has a running run.
func (a *API) busy(ctx context.Context, tenant, thread string) (bool, error) {
	rs, err := a.DB.ListRuns(ctx, tenant, thread, db.RunQuery{Status: db.RunRunning, Limit: 1})
	return len(rs) > 0, err
}

func (a *API) updateThreadState(w http.ResponseWriter, r *http.Request) {
	t, ok := a.loadThread(w, r)
	if !ok {
		return
	}
	b, ok := decodeBody[wire.ThreadStateUpdate](a, w, r)
	if !ok {
		return
	}
	cpID, ns := b.CheckpointID, ""
	if b.Checkpoint != nil {
		if b.Checkpoint.CheckpointID != "" {
			cpID = b.Checkpoint.CheckpointID
		}
		ns = b.Checkpoint.CheckpointNS
	}
	ref, p, err := a.updateState(r.Context(), a.tenant(r), t, b.Values, nil, b.AsNode, cpID, ns, "")
	if p != nil {
		p.Write(w, r)
		return
	}
	if err != nil {
		a.stateFail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, wire.ThreadStateUpdateResult{Checkpoint: *wireCheckpoint(t.ID, ref)})
}

// updateState applies values (and cmd) as node asNode and records the
// thread's new values, status and interrupts. Problems in the request are
// returned as p, with pointers under base.
func (a *API) updateState(ctx context.Context, tenant string, t db.Thread, values json.RawMessage, cmd *wire.Command, asNode, cpID, ns, base string) (checkpoint.Ref, *wire.Problem, error) {
	if busy, err := a.busy(ctx, tenant, t.ID); err != nil {
		return checkpoint.Ref{}, nil, err
	} else if busy {
		return checkpoint.Ref{}, wire.Conflict("the thread has a running run; wait for it (GET .../runs/{run_id}/join) or cancel it before updating the state"), nil
	}
	g, err := a.threadGraph(ctx, tenant, t)
	if err != nil {
		return checkpoint.Ref{}, nil, err
	}
	var update graph.Update
	if len(values) > 0 && string(values) != "null" {
		if update, err = runs.LCConverter()(g, values); err != nil {
			return checkpoint.Ref{}, invalidAt(base+"/values", err), nil
		}
	}
	opts := a.stateOpts(tenant, t.ID)
	if cpID != "" {
		opts = append(opts, graph.WithCheckpointID(cpID))
	}
	if ns != "" {
		opts = append(opts, graph.WithNamespace(ns))
	}
	if cmd != nil {
		gc, p := commandFor(g, cmd, base+"/command")
		if p != nil {
			return checkpoint.Ref{}, p, nil
		}
		opts = append(opts, graph.WithCommand(gc))
	}
	if ns == "" && asNode != "" && asNode != graph.START && asNode != graph.END && !slices.Contains(g.Nodes(), asNode) {
		return checkpoint.Ref{}, wire.Invalid(wire.FieldError{Pointer: base + "/as_node", Detail: fmt.Sprintf("no node %q in this graph (its nodes: %s)", asNode, strings.Join(g.Nodes(), ", "))}), nil
	}
	ref, err := g.UpdateState(ctx, update, asNode, opts...)
	switch {
	case errors.Is(err, checkpoint.ErrConflict):
		return checkpoint.Ref{}, wire.Conflict("the thread's state changed while it was updated; read it again and retry"), nil
	case errors.Is(err, checkpoint.ErrNotFound) && cpID != "":
		return checkpoint.Ref{}, wire.NotFound("checkpoint", cpID), nil
	case err != nil && strings.HasPrefix(err.Error(), "graph: "):
		return checkpoint.Ref{}, invalidAt(base+"/values", err), nil
	case err != nil:
		return checkpoint.Ref{}, nil, err
	}
	if ns == "" {
		if err := a.recordState(ctx, tenant, t.ID, g); err != nil {
			return ref, nil, err
		}
	}
	return ref, nil, nil
}

// recordState copies the thread's latest state to its row, as the run
// service does after a run.
func (a *API) recordState(ctx context.Context, tenant, thread string, g *graph.Graph) error {
	snap, err := g.GetState(ctx, a.stateOpts(tenant, thread)...)
	if err != nil {
		return err
	}
	res := db.ThreadResult{Status: db.ThreadIdle}
	if res.Values, err = (runs.LCWire{}).State(snap.Values); err != nil {
		return err
	}
	byTask := map[string][]storedInterrupt{}
	for _, in := range snap.Interrupts {
		s := storedInterrupt{ID: in.ID, Value: in.Payload, Schema: in.Schema}
		if in.Namespace != "" {
			s.NS = strings.Split(in.Namespace, "|")
		}
		byTask[in.ID] = append(byTask[in.ID], s)
	}
	res.Interrupts, _ = json.Marshal(byTask)
	if len(snap.Interrupts) > 0 {
		res.Status = db.ThreadInterrupted
	}
	_, err = a.DB.SetThreadResult(ctx, tenant, thread, res)
	return err
}

// commandFor turns a superstep's command into the engine's (update and
// goto; a resume has nothing to answer outside a run).
func commandFor(g *graph.Graph, c *wire.Command, ptr string) (graph.Command, *wire.Problem) {
	var out graph.Command
	if c.HasResume() {
		return out, wire.Invalid(wire.FieldError{Pointer: ptr + "/resume", Detail: "a state update cannot answer an interrupt; send the answer as a run's command.resume"})
	}
	if c.Update != nil {
		for i, p := range c.Update.Pairs {
			wr, err := g.DecodeWrite(p.Key, "set", p.Value)
			if err != nil {
				at := ptr + "/update/" + p.Key
				if c.Update.List {
					at = fmt.Sprintf("%s/update/%d", ptr, i)
				}
				return out, invalidAt(at, err)
			}
			out.Update = append(out.Update, wr)
		}
	}
	nodes := g.Nodes()
	for i, t := range c.Goto {
		if t.Node != graph.END && !slices.Contains(nodes, t.Node) {
			return out, wire.Invalid(wire.FieldError{Pointer: fmt.Sprintf("%s/goto/%d", ptr, i), Detail: fmt.Sprintf("no node %q in this graph (its nodes: %s)", t.Node, strings.Join(nodes, ", "))})
		}
		if t.Send {
			out.Goto = append(out.Goto, graph.SendJSON(t.Node, t.Input))
		} else {
			out.Goto = append(out.Goto, graph.To(t.Node))
		}
	}
	return out, nil
}

// applySupersteps applies a new thread's supersteps in order, each update
// as its node, and returns the thread row with the resulting state.
func (a *API) applySupersteps(ctx context.Context, tenant string, t db.Thread, steps []wire.Superstep) (db.Thread, error) {
	for i, s := range steps {
		for j, u := range s.Updates {
			base := fmt.Sprintf("/supersteps/%d/updates/%d", i, j)
			_, p, err := a.updateState(ctx, tenant, t, u.Values, u.Command, u.AsNode, "", "", base)
			if p != nil {
				return t, p
			}
			if err != nil {
				return t, err
			}
		}
	}
	return a.DB.GetThread(ctx, tenant, t.ID)
}
