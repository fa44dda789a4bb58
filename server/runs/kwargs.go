package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// Kwargs is a run's request in the form the run service executes it; it is
// stored with the run (db.Run.Kwargs) so a worker in any process, or a
// later takeover, runs exactly what was asked. The HTTP layer builds it
// from LangGraph's run-create body.
type Kwargs struct {
	// Input is the run's input: a JSON object of state keys (messages in
	// LangChain's JSON are converted by the service's input converter).
	// Absent or null with no Command: the thread resumes.
	Input json.RawMessage `json:"input,omitempty"`
	// Command answers interrupts, updates the state and routes, in one
	// step (LangGraph's command).
	Command *Command `json:"command,omitempty"`
	// Config is LangGraph's config: "configurable" joins the run context;
	// "recursion_limit" is the step limit.
	Config json.RawMessage `json:"config,omitempty"`
	// Context is the run context (merged over the assistant's and
	// config.configurable, key by key).
	Context json.RawMessage `json:"context,omitempty"`
	// CheckpointID replays or forks from that checkpoint of the thread.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// InterruptBefore/After name nodes ("*", graph.AllNodes, for all;
	// "sub/node" inside a subgraph).
	InterruptBefore []string `json:"interrupt_before,omitempty"`
	InterruptAfter  []string `json:"interrupt_after,omitempty"`
	// Durability is "sync", "async" or "exit" ("" for the default).
	Durability string `json:"durability,omitempty"`
	// StreamMode and StreamSubgraphs choose the events logged for the run
	// (see the executor); they do not change what the graph does.
	StreamMode      []string `json:"stream_mode,omitempty"`
	StreamSubgraphs bool     `json:"stream_subgraphs,omitempty"`
	// TemporaryThread marks a stateless run's thread as temporary: when
	// the run ends, the executor deletes the thread (row, runs, events and
	// checkpoints). Joiners already subscribed still get every event from
	// the broker; a later read of the thread is a 404.
	TemporaryThread bool `json:"temporary_thread,omitempty"`
	// TraceContext is the W3C traceparent of the request that created the
	// run (Hooks.TraceContext), so its execution joins that trace.
	TraceContext string `json:"trace_context,omitempty"`
	// Webhook is the URL the server POSTs the finished run to (see
	// Hooks.Finished); "" for none.
	Webhook string `json:"webhook,omitempty"`
	// ClientTools are tools the client declares for this run (frontend
	// tools): only graphs registered with GraphSpec.ClientTools accept
	// them (Create refuses the run otherwise). The executor gives them to
	// the graph with tool.WithClientTools; a call of one stops the run
	// with a tool.ClientCall interrupt the client answers.
	ClientTools []ClientTool `json:"client_tools,omitempty"`
}

// ClientTool is a client-declared tool: its name, description and the
// JSON Schema of its arguments.
type ClientTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// clientSpecs converts client tools into model tool specs.
func clientSpecs(ts []ClientTool) []llm.ToolSpec {
	if len(ts) == 0 {
		return nil
	}
	out := make([]llm.ToolSpec, len(ts))
	for i, t := range ts {
		out[i] = llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return out
}

// Command is LangGraph's run command.
type Command struct {
	// Resume answers the waiting interrupts: one value for the one that
	// waits, or an object keyed by interrupt IDs. An explicit JSON null is
	// a deliberate null answer.
	Resume json.RawMessage `json:"resume,omitempty"`
	// Update is a JSON object of state keys, or a list of [key, value].
	Update json.RawMessage `json:"update,omitempty"`
	// Goto is a node name, a Send ({"node", "input"}), or a list of them.
	Goto json.RawMessage `json:"goto,omitempty"`
}

// InputError is a run request that does not fit the graph or the thread.
// Pointer is the JSON Pointer of the field at fault; the HTTP layer answers
// with a 4xx problem naming it.
type InputError struct {
	Pointer string
	Detail  string
}

func (e *InputError) Error() string { return e.Pointer + ": " + e.Detail }

func inputErr(pointer, format string, args ...any) *InputError {
	return &InputError{Pointer: pointer, Detail: fmt.Sprintf(format, args...)}
}

// Converter decodes a JSON object of state keys into writes: the service's
// converter reads LangChain messages (with removals); the default is
// graph.DecodeInput.
type Converter func(g *graph.Graph, obj json.RawMessage) (graph.Update, error)

// Plan is what executing Kwargs on a graph means: its input and run
// options.
type Plan struct {
	Input   graph.Update // nil: the thread resumes (or the command is the input)
	Options []graph.RunOption
}

// PlanRun turns kw into a plan for g. waiting lists the interrupts the
// thread waits on (for a command's resume); assistantCtx is the
// assistant's default run context. Errors are *InputError.
func PlanRun(g *graph.Graph, kw Kwargs, waiting []graph.InterruptInfo, assistantCtx json.RawMessage, conv Converter) (Plan, error) {
	var p Plan
	if conv == nil {
		conv = func(g *graph.Graph, obj json.RawMessage) (graph.Update, error) { return g.DecodeInput(obj) }
	}
	decodeState := func(pointer string, raw json.RawMessage) (graph.Update, error) {
		u, err := conv(g, raw)
		if err != nil {
			var fe interface{ FieldPointer() string }
			if errors.As(err, &fe) {
				return nil, inputErr(pointer+fe.FieldPointer(), "%s", strings.TrimPrefix(err.Error(), "graph: "))
			}
			return nil, inputErr(pointer, "%s", strings.TrimPrefix(err.Error(), "graph: "))
		}
		return u, nil
	}
	if present(kw.Input) {
		if kw.Command != nil {
			return p, inputErr("/command", "give either input or command, not both: a command is the run's input")
		}
		u, err := decodeState("/input", kw.Input)
		if err != nil {
			return p, err
		}
		p.Input = u
		if p.Input == nil {
			p.Input = graph.Writes()
		}
	}
	if kw.Command != nil {
		opts, err := planCommand(g, *kw.Command, waiting, decodeState)
		if err != nil {
			return p, err
		}
		p.Options = append(p.Options, opts...)
	}
	if kw.CheckpointID != "" {
		p.Options = append(p.Options, graph.WithCheckpointID(kw.CheckpointID))
	}
	var cfg struct {
		Configurable   json.RawMessage `json:"configurable"`
		RecursionLimit *int            `json:"recursion_limit"`
	}
	if present(kw.Config) {
		if err := json.Unmarshal(kw.Config, &cfg); err != nil {
			return p, inputErr("/config", "must be an object: %v", err)
		}
		if cfg.RecursionLimit != nil {
			if *cfg.RecursionLimit < 1 {
				return p, inputErr("/config/recursion_limit", "must be at least 1, got %d", *cfg.RecursionLimit)
			}
			p.Options = append(p.Options, graph.WithStepLimit(*cfg.RecursionLimit))
		}
	}
	rc, err := mergeObjects([]string{"/assistant/context", "/config/configurable", "/context"}, assistantCtx, cfg.Configurable, kw.Context)
	if err != nil {
		return p, err
	}
	if rc != nil {
		p.Options = append(p.Options, graph.WithRunContext(rc))
	}
	for _, sel := range []struct {
		ptr   string
		nodes []string
	}{{"/interrupt_before", kw.InterruptBefore}, {"/interrupt_after", kw.InterruptAfter}} {
		for i, n := range sel.nodes {
			// "*" is every node; "sub/node" names a subgraph's node,
			// which the subgraph checks.
			if n != graph.AllNodes && !strings.Contains(n, "/") && !slices.Contains(g.Nodes(), n) {
				return p, inputErr(fmt.Sprintf("%s/%d", sel.ptr, i), "no node %q in this graph (its nodes: %s)", n, strings.Join(g.Nodes(), ", "))
			}
		}
	}
	if len(kw.InterruptBefore) > 0 {
		p.Options = append(p.Options, graph.WithInterruptBefore(kw.InterruptBefore...))
	}
	if len(kw.InterruptAfter) > 0 {
		p.Options = append(p.Options, graph.WithInterruptAfter(kw.InterruptAfter...))
	}
	switch kw.Durability {
	case "", "sync":
		if kw.Durability == "sync" {
			p.Options = append(p.Options, graph.WithDurability(graph.DurabilitySync))
		}
	case "async":
		p.Options = append(p.Options, graph.WithDurability(graph.DurabilityAsync))
	case "exit":
		p.Options = append(p.Options, graph.WithDurability(graph.DurabilityExit))
	default:
		return p, inputErr("/durability", "must be sync, async or exit, got %q", kw.Durability)
	}
	return p, nil
}

// planCommand turns a command into run options.
func planCommand(g *graph.Graph, c Command, waiting []graph.InterruptInfo, decodeState func(string, json.RawMessage) (graph.Update, error)) ([]graph.RunOption, error) {
	var opts []graph.RunOption
	var cmd graph.Command
	hasCmd := false
	if len(c.Resume) > 0 {
		o, err := planResume(c.Resume, waiting)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	if present(c.Update) {
		raw := c.Update
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
			var pairs [][2]json.RawMessage
			if err := json.Unmarshal(raw, &pairs); err != nil {
				return nil, inputErr("/command/update", "must be an object of state keys or a list of [key, value] pairs: %v", err)
			}
			obj := map[string]json.RawMessage{}
			for i, kv := range pairs {
				var k string
				if err := json.Unmarshal(kv[0], &k); err != nil {
					return nil, inputErr(fmt.Sprintf("/command/update/%d/0", i), "must be a state key name")
				}
				obj[k] = kv[1]
			}
			raw, _ = json.Marshal(obj)
		}
		u, err := decodeState("/command/update", raw)
		if err != nil {
			return nil, err
		}
		cmd.Update, hasCmd = u, true
	}
	if present(c.Goto) {
		targets, err := planGoto(g, c.Goto)
		if err != nil {
			return nil, err
		}
		cmd.Goto, hasCmd = targets, true
	}
	if hasCmd {
		opts = append(opts, graph.WithCommand(cmd))
	}
	if len(opts) == 0 {
		return nil, inputErr("/command", "is empty: give resume, update or goto")
	}
	return opts, nil
}

// planResume chooses between one answer and answers by interrupt ID.
func planResume(raw json.RawMessage, waiting []graph.InterruptInfo) (graph.RunOption, error) {
	if len(waiting) == 0 {
		return nil, inputErr("/command/resume", "the thread has no interrupt waiting for an answer")
	}
	byID := map[string]bool{}
	var nodeWaits []graph.InterruptInfo
	for _, w := range waiting {
		byID[w.ID] = true
		if !w.Breakpoint() {
			nodeWaits = append(nodeWaits, w)
		}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && len(obj) > 0 {
		all := true
		for id := range obj {
			all = all && byID[id]
		}
		if all {
			m := make(map[string]any, len(obj))
			for _, id := range slices.Sorted(maps.Keys(obj)) {
				for _, w := range waiting {
					if w.ID == id {
						if err := checkAnswer(w, obj[id], "/command/resume/"+id); err != nil {
							return nil, err
						}
					}
				}
				m[id] = obj[id]
			}
			return graph.WithResumeMap(m), nil
		}
	}
	if m, ok, err := splitDecisions(raw, nodeWaits); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return graph.WithResumeMap(m), nil
	}
	if len(nodeWaits) > 1 {
		ids := make([]string, len(nodeWaits))
		for i, w := range nodeWaits {
			ids[i] = w.ID
		}
		return nil, inputErr("/command/resume", "%d interrupts are waiting; answer them with an object keyed by their IDs: %s", len(nodeWaits), strings.Join(ids, ", "))
	}
	if len(nodeWaits) == 1 {
		if err := checkAnswer(nodeWaits[0], raw, "/command/resume"); err != nil {
			return nil, err
		}
	}
	return graph.WithResume(json.RawMessage(raw)), nil
}

// splitDecisions reads LangChain's un-keyed {"decisions": [...]} while
// several tool approvals wait (one interrupt per call in Trellis, one
// action request each): with exactly one decision per waiting approval, the
// i-th decision answers the i-th interrupt in the thread's order (the order
// of the state's interrupts and of __interrupt__), as LangChain pairs
// decisions with action_requests. Any other count is not split (ok false),
// so the caller's 422 lists the IDs: a decision is never guessed onto a call.
func splitDecisions(raw json.RawMessage, waits []graph.InterruptInfo) (map[string]any, bool, error) {
	if len(waits) < 2 {
		return nil, false, nil
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(raw, &body) != nil || len(body) != 1 || body["decisions"] == nil {
		return nil, false, nil
	}
	var decisions []json.RawMessage
	if json.Unmarshal(body["decisions"], &decisions) != nil || len(decisions) != len(waits) {
		return nil, false, nil
	}
	m := make(map[string]any, len(waits))
	for i, w := range waits {
		var p struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(w.Payload, &p) != nil || p.Kind != "tool_approval" {
			return nil, false, nil
		}
		one, _ := json.Marshal(map[string][]json.RawMessage{"decisions": {decisions[i]}})
		if err := checkAnswer(w, one, fmt.Sprintf("/command/resume/decisions/%d", i)); err != nil {
			return nil, true, err
		}
		m[w.ID] = json.RawMessage(one)
	}
	return m, true, nil
}

// checkAnswer validates an answer against the JSON Schema its interrupt
// expects (InterruptInfo.Schema), so an answer that does not fit is a 4xx
// naming what was expected and the thread keeps waiting.
func checkAnswer(in graph.InterruptInfo, raw json.RawMessage, pointer string) error {
	if len(in.Schema) == 0 {
		return nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(in.Schema, &s); err != nil {
		return nil // a schema the agent wrote wrongly is not the caller's fault: the node checks
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return inputErr(pointer, "is not JSON: %v", err)
	}
	if err := rs.Validate(v); err != nil {
		return inputErr(pointer, "does not fit what interrupt %s (node %q) expects: %v; expected: %s", in.ID, in.Node, err, in.Schema)
	}
	return nil
}

// planGoto reads a goto: a node name, a Send object, or a list of them.
func planGoto(g *graph.Graph, raw json.RawMessage) ([]graph.Target, error) {
	var list []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, inputErr("/command/goto", "must be a node name, a Send object or a list of them: %v", err)
		}
	} else {
		list = []json.RawMessage{raw}
	}
	nodes := g.Nodes()
	var out []graph.Target
	for i, item := range list {
		pointer := "/command/goto"
		if len(list) > 1 || bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
			pointer = fmt.Sprintf("/command/goto/%d", i)
		}
		var name string
		if json.Unmarshal(item, &name) == nil {
			if name != graph.END && !slices.Contains(nodes, name) {
				return nil, inputErr(pointer, "no node %q in this graph (its nodes: %s)", name, strings.Join(nodes, ", "))
			}
			out = append(out, graph.To(name))
			continue
		}
		var send struct {
			Node  string          `json:"node"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(item, &send); err != nil || send.Node == "" {
			return nil, inputErr(pointer, "must be a node name or a Send object {\"node\": ..., \"input\": ...}")
		}
		if !slices.Contains(nodes, send.Node) {
			return nil, inputErr(pointer+"/node", "no node %q in this graph (its nodes: %s)", send.Node, strings.Join(nodes, ", "))
		}
		out = append(out, graph.SendJSON(send.Node, send.Input))
	}
	return out, nil
}

// mergeObjects merges JSON objects key by key, later ones winning; nil
// when all are absent.
func mergeObjects(pointers []string, objs ...json.RawMessage) (json.RawMessage, error) {
	var merged map[string]json.RawMessage
	for i, raw := range objs {
		if !present(raw) {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, inputErr(pointers[i], "must be a JSON object: %v", err)
		}
		if merged == nil {
			merged = map[string]json.RawMessage{}
		}
		maps.Copy(merged, m)
	}
	if merged == nil {
		return nil, nil
	}
	b, err := json.Marshal(merged)
	return b, err
}

// present reports whether a JSON value was given and is not null.
func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}
