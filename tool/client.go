package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// Client tools (frontend tools) are tools a client declares for one run:
// the agent offers them to its model like its own, but does not run them.
// A call of one stops the run with an interrupt of kind ClientCallKind
// carrying the call; the client runs the tool and answers the interrupt
// with a ClientResult, which the agent appends to the history as the
// call's tool message before asking its model again.
//
// The tools reach an agent through the run's context.Context
// (WithClientTools), so a graph built once serves runs with different
// client tools; an agent that supports them reads ClientTools in its model
// node and calls AnswerClientCall for a call of one.

// ClientCallKind is the Kind of the interrupt a client tool call raises.
const ClientCallKind = "client_tool_call"

// ClientCall is the payload of a client tool call's interrupt.
type ClientCall struct {
	// Kind is ClientCallKind.
	Kind string `json:"kind"`
	// CallID is the model's ID of the call; the client's result names it.
	CallID string `json:"call_id"`
	// Tool is the client tool's name.
	Tool string `json:"tool"`
	// Arguments are the arguments the model wrote (JSON text, normally
	// an object).
	Arguments string `json:"arguments"`
}

// ClientResult answers a ClientCall: the tool's result as text, or the
// error the tool failed with.
type ClientResult struct {
	Content string `json:"content"`
	// Error, when not empty, says the tool failed: the model gets it as a
	// tool error.
	Error string `json:"error,omitempty"`
}

// clientResultSchema is the answer schema of a ClientCall interrupt.
var clientResultSchema = json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"},"error":{"type":"string"}},"required":["content"]}`)

type clientToolsKey struct{}

// MaxClientTools bounds the client tools of one run.
const MaxClientTools = 128

// WithClientTools returns a context carrying the client tools of a run;
// nodes of a graph run with it (Invoke, Stream) read them with
// ClientTools.
func WithClientTools(ctx context.Context, specs []llm.ToolSpec) context.Context {
	if len(specs) == 0 {
		return ctx
	}
	return context.WithValue(ctx, clientToolsKey{}, slices.Clone(specs))
}

// ClientTools returns the client tools of the run ctx belongs to (nil for
// none).
func ClientTools(ctx context.Context) []llm.ToolSpec {
	specs, _ := ctx.Value(clientToolsKey{}).([]llm.ToolSpec)
	return specs
}

// ClientTool returns the client tool of the run named name.
func ClientTool(ctx context.Context, name string) (llm.ToolSpec, bool) {
	for _, s := range ClientTools(ctx) {
		if s.Name == name {
			return s, true
		}
	}
	return llm.ToolSpec{}, false
}

// CheckClientTools says what is wrong with a run's client tools (nil when
// nothing is): too many, a name that is empty, not a valid tool name or
// given twice, parameters that are not a JSON object schema. Errors name
// the tool by its index.
func CheckClientTools(specs []llm.ToolSpec) error {
	if len(specs) > MaxClientTools {
		return fmt.Errorf("%d client tools; at most %d", len(specs), MaxClientTools)
	}
	seen := map[string]bool{}
	for i, s := range specs {
		if err := checkName(s.Name); err != nil {
			return fmt.Errorf("tools[%d]: %w", i, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("tools[%d]: the name %q is given twice", i, s.Name)
		}
		seen[s.Name] = true
		if len(s.Parameters) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(s.Parameters, &obj); err != nil {
				return fmt.Errorf("tools[%d] (%s): parameters must be a JSON Schema object: %v", i, s.Name, err)
			}
		}
	}
	return nil
}

// AnswerClientCall handles a call of a client tool in a tool node: the
// first time it stops the run with a ClientCall interrupt; when the run is
// resumed with the client's ClientResult it returns the writes that
// append the result as the call's tool message (and record it, when the
// node keeps records).
func (n *Node) AnswerClientCall(ctx context.Context, call llm.ToolCall) (graph.Output, error) {
	payload := ClientCall{Kind: ClientCallKind, CallID: call.ID, Tool: call.Name, Arguments: call.Arguments}
	res, err := graph.Interrupt[ClientResult](ctx, payload, graph.ExpectAnswer(clientResultSchema))
	if err != nil {
		return nil, err
	}
	rec := newRecord(ctx, call)
	if res.Error != "" {
		rec.Error = res.Error
		text := "Error: " + res.Error
		if res.Content != "" {
			text += "\n\n" + res.Content
		}
		return n.writes(llm.ToolError(call, text), rec), nil
	}
	return n.writes(llm.ToolResult(call, res.Content), rec), nil
}
