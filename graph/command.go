package graph

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/trellis-agents/trellis/checkpoint"
)

// Command is a node output that writes an update and chooses where the run
// goes next.
//
// Goto replaces the node's edges: when Goto is non-empty, the node's static,
// conditional, fan-out and join edges are not followed for this run of the
// node; only the Goto targets run next. (LangGraph adds goto targets to the
// static edges instead, which its users find surprising: a node that routes
// itself should not also trigger the edges it routed around.) An empty Goto
// follows the node's edges as an Update would. Every Goto target must be
// declared on the node with Destinations; any other target fails the run.
//
// With Parent set, a node inside a subgraph addresses the graph around it:
// the subgraph stops (its other tasks of the step are cancelled), and its
// node in the parent graph finishes with this Command as its output — the
// subgraph's earlier writes to shared keys plus Update, applied through the
// parent's reducers, and Goto naming nodes of the parent, which the
// subgraph node must declare with Destinations. This is how a sub-agent
// hands the conversation to another (LangGraph's Command.PARENT). A graph
// invoked from inside a node works the same when the node returns Invoke's
// error as is. From a node of the root graph, which has no parent, the run
// fails with a *ParentCommandError carrying the command.
type Command struct {
	Goto   []Target
	Update Update
	Parent bool
}

// ParentCommandError carries a Command with Parent set out of the run of
// the graph whose node returned it.
//
// Inside a subgraph (or a graph a node invoked), the node that runs that
// graph receives it and the engine turns it into that node's output: nodes
// that invoke a graph themselves return it as is. From a node of the root
// graph, which has no parent, it is the error Invoke returns and the last
// item Stream yields (Namespace ""; the run's status is StatusFailed, and
// the step's other writes are not committed): a sub-agent graph run on its
// own so shows where it tried to hand off — Command.Goto — and with what
// update, as LangGraph raises its ParentCommand from the root graph. Test
// for it with errors.As.
type ParentCommandError struct {
	// Command is the command as the node returned it (Parent set).
	Command Command
	// Namespace is the namespace of the run that the node belongs to: ""
	// at the root.
	Namespace string
	// Node is the node that returned the command.
	Node string
}

func (e *ParentCommandError) Error() string {
	if e.Namespace == "" {
		return fmt.Sprintf("graph: node %q sent a Command to its parent graph (goto %v), but its graph runs at the top level", e.Node, e.Command.Goto)
	}
	return fmt.Sprintf("graph: node %q in subgraph %q sent a Command to its parent graph (goto %v); return this error as is from the node that runs the subgraph", e.Node, e.Namespace, e.Command.Goto)
}

func (Command) output() {}

// Target is a destination of a Command's Goto or of a fan-out edge: a node
// (To) or a node with its own payload (Send).
type Target struct {
	node    string
	payload any
	send    bool
}

// To targets a node by name; END ends this branch.
func To(node string) Target { return Target{node: node} }

// Send targets a node with a payload of its own: the node runs once per
// Send, in the next step, reading the payload as the argument of a function
// added with AddSendNode. Use Send for map-reduce: one task per item, each
// writing its result into a reducer key. Tasks started by Send run after the
// edge-triggered tasks of the step, in the order of their Sends.
func Send[T any](node string, payload T) Target {
	return Target{node: node, payload: payload, send: true}
}

// Node returns the target node's name.
func (t Target) Node() string { return t.node }

// String formats the target for logs and errors.
func (t Target) String() string {
	if t.send {
		return fmt.Sprintf("Send(%s, %v)", t.node, t.payload)
	}
	return t.node
}

// WithCommand starts the run from a command instead of an input (give
// Invoke a nil input): in one step it applies cmd.Update and runs the
// cmd.Goto targets, together with the answers of WithResume or
// WithResumeMap given beside it. This is LangGraph's Command as run input.
//
// On a thread with pending work (interrupted or failed tasks), the update
// is applied to the state the resumed tasks read, the Goto targets run in
// the same step as those tasks, and all of it commits as one checkpoint;
// until then the command is saved as pending writes, so a crash or another
// interrupt loses none of it. On a new or finished thread, the command is
// a step of its own, like an input: its update is applied and only its Goto
// targets run next (an update alone runs nothing). Goto may name any node,
// or Send to a node that takes a payload; END is ignored.
func WithCommand(cmd Command) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().command = &cmd })
}

// SendJSON targets a node that takes a payload, with the payload as JSON:
// the node's payload type decodes it when the command is applied (an error
// naming the node when it does not fit). It is how a command that arrives
// as JSON (the HTTP API's goto {"node", "input"}) sends to a typed node.
func SendJSON(node string, payload json.RawMessage) Target {
	return Target{node: node, payload: rawPayload(payload), send: true}
}

// rawPayload is a Send payload still in JSON.
type rawPayload json.RawMessage

// command applies a command given to the run (cmd) and one restored from
// the checkpoint's pending writes (r.x.command).
func (r *run) command(cmd *Command, resumed bool) error {
	if cmd != nil {
		c := *cmd
		var err error
		if c.Goto, err = r.decodeTargets(c.Goto); err != nil {
			return err
		}
		if err := r.checkGoto(c.Goto); err != nil {
			return err
		}
		cmd = &c
	}
	if !resumed || len(r.next) == 0 {
		if cmd == nil {
			return nil
		}
		// A step of its own, like an input.
		t := &task{r: r, node: r.g.start, writes: cmd.Update, routes: cmd.Goto, viaGoto: true, step: r.step}
		if resumed {
			r.step++
			t.step = r.step
		}
		if err := r.checkWrites(t); err != nil {
			return fmt.Errorf("graph: the command's update: %w", err)
		}
		r.source = checkpoint.SourceInput
		r.next = nil
		return r.commit([]*task{t})
	}
	// With pending work: the command's update applies to the state the
	// step reads and its targets join the step. Its record (update, targets
	// and the IDs the targets' tasks got) is saved under a reserved task ID,
	// so it is found again whatever checkpoint carries it (see adopt).
	ct := &task{r: r, node: r.g.start, step: r.step + 1, done: true, viaGoto: true}
	var ids []string
	if r.x != nil && r.x.command != nil {
		ct.writes, ct.routes = r.x.command.writes, r.x.command.routes
		ids = r.x.commandIDs
	}
	if cmd != nil {
		if err := r.checkWrites(&task{r: r, node: r.g.start, writes: cmd.Update}); err != nil {
			return fmt.Errorf("graph: the command's update: %w", err)
		}
		ct.writes = append(slices.Clone(ct.writes), cmd.Update...)
		ct.routes = append(slices.Clone(ct.routes), cmd.Goto...)
	}
	ids = append(slices.Clone(ids), make([]string, len(ct.routes)-len(ids))...)
	sends := int32(0)
	for _, t := range r.next {
		if t.push {
			sends = max(sends, t.seq+1)
		}
	}
	for i, tg := range ct.routes {
		if tg.node == END {
			continue
		}
		n := r.g.nodes[r.g.byName[tg.node]]
		var t *task
		if !tg.send {
			if j := slices.IndexFunc(r.next, func(t *task) bool { return !t.push && t.node == n }); j >= 0 {
				ids[i] = r.next[j].ID() // already due in this step
				continue
			}
			t = &task{r: r, node: n, step: r.step + 1, idx: int32(len(r.next))}
		} else {
			t = &task{r: r, node: n, push: true, seq: sends, payload: tg.payload, step: r.step + 1, idx: int32(len(r.next))}
			sends++
		}
		if h, ok := parseTaskID(ids[i]); ok {
			t.hash, t.hashed = h, true // the ID it had when the command was first given
		}
		ids[i] = t.ID()
		r.next = append(r.next, t)
		if r.x != nil && r.x.orphans != nil {
			// It ran in an earlier attempt of the step: what it left.
			if err := r.restoreTask(t, r.x.orphans[t.ID()]); err != nil {
				return fmt.Errorf("graph: restore the command's target %q: %w", t.node.name, err)
			}
		}
	}
	if cmd != nil {
		if err := r.saveCommand(ct, ids); err != nil {
			return err
		}
		r.dirty = true
	}
	if err := r.apply([]*task{ct}); err != nil {
		return fmt.Errorf("graph: the command's update: %w", err)
	}
	return nil
}

// commandTaskID is the reserved task ID under which a command given with
// pending work is saved, as pending writes of the checkpoint it applies to.
const commandTaskID = "command"

// saveCommand stores a command's record: its update, its targets and the
// IDs of their tasks.
func (r *run) saveCommand(ct *task, ids []string) error {
	var ws []checkpoint.PendingWrite
	add := func(key string, v []byte) {
		ws = append(ws, checkpoint.PendingWrite{TaskID: commandTaskID, Index: len(ws), Key: key, Value: v})
	}
	for _, w := range ct.writes {
		b, err := w.key.self.encodeWrite(w)
		if err != nil {
			return fmt.Errorf("graph: encode the command's update: %w", err)
		}
		add(w.key.name, b)
	}
	routes := wireRoutes{Goto: true, Targets: []wireTarget{}}
	for i, tg := range ct.routes {
		wt := wireTarget{Node: tg.node, Send: tg.send, Task: ids[i]}
		if tg.send {
			p, err := r.g.nodes[r.g.byName[tg.node]].encodePayload(tg.payload)
			if err != nil {
				return fmt.Errorf("graph: encode the payload the command sends to %q: %w", tg.node, err)
			}
			wt.Payload = p
		}
		routes.Targets = append(routes.Targets, wt)
	}
	b, err := json.Marshal(routes)
	if err != nil {
		return fmt.Errorf("graph: encode the command's targets: %w", err)
	}
	add(checkpoint.WriteGoto, b)
	if r.cfg.durability == DurabilityExit && !r.finishing() {
		r.hold(heldWrites{cp: r.cpID, task: commandTaskID, node: "command", ws: ws})
		return nil
	}
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.cpID}
	do := func() error {
		if err := r.cfg.saver.PutWrites(r.ctx, ref, commandTaskID, ws); err != nil {
			return fmt.Errorf("graph: save the command: %w", err)
		}
		return nil
	}
	if r.w != nil {
		r.w.submit(do)
		return nil
	}
	return do()
}

// decodeTargets decodes the JSON payloads of SendJSON targets into the
// payload types of their nodes.
func (r *run) decodeTargets(targets []Target) ([]Target, error) {
	var out []Target
	for i, tg := range targets {
		raw, ok := tg.payload.(rawPayload)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(targets)
		}
		j, found := r.g.byName[tg.node]
		if !found || !r.g.nodes[j].takesPayload {
			return nil, fmt.Errorf("graph: the command sends to node %q, which does not take a payload%s", tg.node, suggest(tg.node, r.g.byName))
		}
		v, err := r.g.nodes[j].decodePayload(raw)
		if err != nil {
			return nil, fmt.Errorf("graph: the payload the command sends to %q does not decode as %s: %w", tg.node, r.g.nodes[j].payloadType, err)
		}
		out[i].payload = v
	}
	if out == nil {
		return targets, nil
	}
	return out, nil
}

// checkGoto checks a command's targets against the graph.
func (r *run) checkGoto(targets []Target) error {
	for _, tg := range targets {
		if tg.node == END {
			continue
		}
		i, ok := r.g.byName[tg.node]
		if !ok {
			return fmt.Errorf("graph: the command goes to node %q, which the graph lacks%s", tg.node, suggest(tg.node, r.g.byName))
		}
		n := r.g.nodes[i]
		if tg.send && (!n.takesPayload || !n.acceptsPayload(tg.payload)) {
			return fmt.Errorf("graph: the command sends %T to node %q, which does not take it", tg.payload, tg.node)
		}
		if !tg.send && n.takesPayload {
			return fmt.Errorf("graph: the command goes to node %q, which takes a payload; use graph.Send", tg.node)
		}
	}
	return nil
}
