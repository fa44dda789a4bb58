package lcmsg

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// FromChunk converts a piece of streamed model output to the
// AIMessageChunk JSON that LangGraph's messages-tuple mode streams. The
// chunk's id is the id of the message the pieces become, so a client
// that concatenates chunks by id ends with the message that later
// arrives in values. Answer text goes to content; reasoning to
// additional_kwargs.reasoning_content (clients concatenate string kwargs
// across chunks); tool-call text to one tool_call_chunks entry whose
// index, id and name come from the chunk's Meta ("index", "call_id",
// "name", as llm.Call writes them); a voice (Meta "voice", llm.WithVoice)
// to name, as on the message that lands. A tool-call chunk whose index is not
// a number is an error.
func FromChunk(c graph.MessageChunk) (Message, error) {
	m := Message{Type: TypeAIChunk, ID: c.MessageID, Name: c.Meta[llm.MetaVoice]}
	switch c.Part {
	case graph.PartText:
		m.Content = Content{Text: c.Text}
	case graph.PartReasoning:
		m.AdditionalKwargs = map[string]any{KwargReasoning: c.Text}
	case graph.PartToolCall:
		tc := ToolCallChunk{Args: c.Text, Type: "tool_call_chunk"}
		if s, ok := c.Meta["index"]; ok {
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 {
				return Message{}, fmt.Errorf("lcmsg: tool-call chunk of message %s: Meta index %q is not a non-negative number", c.MessageID, s)
			}
			tc.Index = &i
		}
		if s := c.Meta["call_id"]; s != "" {
			tc.ID = &s
		}
		if s := c.Meta["name"]; s != "" {
			tc.Name = &s
		}
		m.ToolCallChunks = []ToolCallChunk{tc}
	default:
		return Message{}, fmt.Errorf("lcmsg: message chunk of %s has unknown part %d", c.MessageID, c.Part)
	}
	return m, nil
}

// RunInfo is what the messages-tuple metadata says about the run, besides
// the task that streamed the chunk. Empty fields are left out.
type RunInfo struct {
	ThreadID    string
	RunID       string
	GraphID     string
	AssistantID string
	// Extra is merged into the metadata (the run's metadata and
	// configurable values, as LangGraph does); the fields above and the
	// task's win over it.
	Extra map[string]any
}

// Metadata builds the metadata half of a messages-tuple event for a
// message event e: "tags" (always a list, as the SDK's type requires),
// "langgraph_node", "langgraph_step", "langgraph_checkpoint_ns" and
// "checkpoint_ns" (the task's namespace: e.Namespace, then node:taskID,
// joined by "|", which the SDK splits to find subgraph messages),
// "langgraph_task_id", and the run's ids.
func Metadata(e graph.Event, run RunInfo) map[string]any {
	md := make(map[string]any, len(run.Extra)+10)
	maps.Copy(md, run.Extra)
	if _, ok := md["tags"].([]string); !ok {
		if _, ok := md["tags"].([]any); !ok {
			md["tags"] = []string{}
		}
	}
	set := func(k, v string) {
		if v != "" {
			md[k] = v
		}
	}
	set("thread_id", run.ThreadID)
	set("run_id", run.RunID)
	set("graph_id", run.GraphID)
	set("assistant_id", run.AssistantID)
	if e.Node != "" {
		ns := e.Node + ":" + e.TaskID
		if e.Namespace != "" {
			ns = e.Namespace + "|" + ns
		}
		md["langgraph_node"] = e.Node
		md["langgraph_step"] = e.Step
		md["langgraph_checkpoint_ns"] = ns
		md["checkpoint_ns"] = ns
		set("langgraph_task_id", e.TaskID)
	}
	for k, v := range e.Message.Meta {
		// Provider detail the UI may show (model name); the tool-call
		// keys already went into the chunk.
		switch k {
		case "index", "call_id", "name", llm.MetaVoice:
		default:
			if _, taken := md[k]; !taken {
				md[k] = v
			}
		}
	}
	return md
}

// Tuple returns the data of a messages-tuple SSE event for a message
// event: the JSON pair [AIMessageChunk, metadata].
func Tuple(e graph.Event, run RunInfo) ([]byte, error) {
	if e.Kind != graph.EventMessages {
		return nil, fmt.Errorf("lcmsg: Tuple needs a messages event, got %s", e.Kind)
	}
	chunk, err := FromChunk(e.Message)
	if err != nil {
		return nil, err
	}
	return json.Marshal([2]any{chunk, Metadata(e, run)})
}
