package runs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/graph"
)

// Wire turns engine values into the JSON the API streams. The service
// plugs in LangChain's message shapes (server/lcmsg); JSONWire encodes
// Trellis's own.
type Wire interface {
	// State encodes a state for "values" events and the thread's values.
	State(s graph.State) (json.RawMessage, error)
	// Update encodes one task's writes for "updates" events.
	Update(u graph.Update) (json.RawMessage, error)
	// Chunk encodes a streamed model chunk for "messages" events (LangGraph's
	// messages-tuple data: [chunk, metadata]).
	Chunk(ev graph.Event, run RunRef) (json.RawMessage, error)
}

// RunRef names the run an event belongs to, for chunk metadata.
type RunRef struct {
	ThreadID, RunID, AssistantID, GraphID string
}

// JSONWire encodes states and updates with their own JSON and chunks as
// [{"id","type","content"}, metadata].
type JSONWire struct{}

// State encodes s with State.MarshalJSON.
func (JSONWire) State(s graph.State) (json.RawMessage, error) { return s.MarshalJSON() }

// Update encodes u with Update.MarshalJSON.
func (JSONWire) Update(u graph.Update) (json.RawMessage, error) { return u.MarshalJSON() }

// Chunk encodes a message chunk with LangGraph's metadata keys.
func (JSONWire) Chunk(ev graph.Event, _ RunRef) (json.RawMessage, error) {
	typ := "AIMessageChunk"
	chunk := map[string]any{"id": ev.Message.MessageID, "type": typ, "content": ev.Message.Text}
	if ev.Message.Part == graph.PartReasoning {
		chunk["content"] = ""
		chunk["additional_kwargs"] = map[string]any{"reasoning_content": ev.Message.Text}
	}
	return json.Marshal([]any{chunk, ChunkMetadata(ev)})
}

// ChunkMetadata is the metadata LangGraph sends with a streamed chunk.
func ChunkMetadata(ev graph.Event) map[string]any {
	md := map[string]any{
		"langgraph_node":          ev.Node,
		"langgraph_step":          ev.Step,
		"langgraph_checkpoint_ns": ev.Namespace,
		"langgraph_task_id":       ev.TaskID,
	}
	for k, v := range ev.Message.Meta {
		md[k] = v
	}
	return md
}

// Stream modes of LangGraph's API that the executor logs.
const (
	ModeValues      = "values"
	ModeUpdates     = "updates"
	ModeMessages    = "messages-tuple"
	ModeCustom      = "custom"
	ModeTasks       = "tasks"
	ModeCheckpoints = "checkpoints"
	ModeDebug       = "debug"
	// ModeSteps is Trellis's own, for the wires (not in the LangGraph
	// API's enum): the tasks mode without the state. A start names the
	// task, its node and its Send payload; an end adds its error and the
	// IDs of its interrupts. A tasks start carries the task's whole input
	// state, so on a long thread every task logged one state; a step
	// event stays a few hundred bytes whatever the thread's length.
	ModeSteps = "steps"
)

// modes is a run's chosen stream modes.
type modes map[string]bool

// parseModes validates stream_mode; the default is values.
func parseModes(list []string) (modes, error) {
	m := modes{}
	for _, s := range list {
		switch s {
		case ModeValues, ModeUpdates, ModeCustom, ModeTasks, ModeCheckpoints, ModeDebug, ModeSteps:
			m[s] = true
		case ModeMessages, "messages":
			m[ModeMessages] = true
		case "events":
			return nil, inputErr("/stream_mode", "stream mode %q (LangChain callback events) is not supported by Trellis; use messages-tuple, updates or debug", s)
		default:
			return nil, inputErr("/stream_mode", "unknown stream mode %q (known: values, updates, messages-tuple, custom, tasks, checkpoints, debug)", s)
		}
	}
	if len(m) == 0 {
		m[ModeValues] = true
	}
	return m, nil
}

// kinds is what the engine must stream for these modes.
func (m modes) kinds() graph.EventKind {
	k := graph.EventInterrupt // interrupts are reported whatever the modes
	if m[ModeValues] || m[ModeCheckpoints] || m[ModeDebug] {
		k |= graph.EventValues
	}
	if m[ModeUpdates] {
		k |= graph.EventUpdates
	}
	if m[ModeMessages] {
		k |= graph.EventMessages
	}
	if m[ModeCustom] {
		k |= graph.EventCustom
	}
	if m[ModeTasks] || m[ModeDebug] || m[ModeSteps] {
		k |= graph.EventTasks
	}
	if m[ModeCheckpoints] || m[ModeDebug] {
		k |= graph.EventCheckpoint
	}
	return k
}

// eventName names an SSE event: the mode, and "|namespace" for subgraphs.
func eventName(mode, ns string) string {
	if ns == "" {
		return mode
	}
	return mode + "|" + ns
}

// wireInterrupts is LangGraph's "__interrupt__" list.
func wireInterrupts(ins []graph.InterruptInfo) []map[string]any {
	out := make([]map[string]any, len(ins))
	for i, in := range ins {
		var v any = nil
		if len(in.Payload) > 0 {
			v = in.Payload
		}
		m := map[string]any{"id": in.ID, "value": v, "kind": in.Kind, "node": in.Node}
		if in.Namespace != "" {
			m["ns"] = strings.Split(in.Namespace, "|")
		}
		if len(in.Schema) > 0 {
			m["response_schema"] = in.Schema // the SDK's Interrupt field
		}
		out[i] = m
	}
	return out
}

// taskEvent encodes a task event for the tasks mode.
func taskEvent(w Wire, ev graph.Event) (json.RawMessage, error) {
	m := map[string]any{"id": ev.TaskID, "name": ev.Node}
	switch ev.Kind {
	case graph.EventTaskStart:
		in, err := w.State(ev.Task.Input)
		if err != nil {
			return nil, err
		}
		m["input"], m["triggers"] = in, ev.Task.Triggers
		if ev.Task.Payload != nil {
			m["payload"] = ev.Task.Payload
		}
	default:
		res, err := w.Update(ev.Task.Result)
		if err != nil {
			return nil, err
		}
		m["result"], m["interrupts"] = res, wireInterrupts(ev.Task.Interrupts)
		m["error"] = nil
		if ev.Task.Err != nil {
			m["error"] = ev.Task.Err.Error()
		}
		m["attempt"], m["cached"] = ev.Task.Attempt, ev.Task.Cached
		m["duration_ms"] = ev.Task.Duration.Milliseconds()
	}
	return json.Marshal(m)
}

// stepEvent encodes a task event for the steps mode: no input state and
// no result, so its size does not grow with the thread.
func stepEvent(ev graph.Event) (json.RawMessage, error) {
	m := map[string]any{"id": ev.TaskID, "name": ev.Node}
	if ev.Kind == graph.EventTaskStart {
		m["start"] = true
		if ev.Task.Payload != nil {
			m["payload"] = ev.Task.Payload
		}
		return json.Marshal(m)
	}
	if ev.Task.Err != nil {
		m["error"] = ev.Task.Err.Error()
	}
	if len(ev.Task.Interrupts) > 0 {
		ids := make([]map[string]string, len(ev.Task.Interrupts))
		for i, in := range ev.Task.Interrupts {
			ids[i] = map[string]string{"id": in.ID}
		}
		m["interrupts"] = ids
	}
	return json.Marshal(m)
}

// debugEvent wraps a payload the way LangGraph's debug mode does.
func debugEvent(kind string, step int, payload json.RawMessage) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"type": kind, "step": step, "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "payload": payload})
}

// errorEvent is the data of an "error" event.
func errorEvent(kind string, err error) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"error": kind, "message": fmt.Sprint(err)})
	return b
}
