// Package tool defines tools a model can call: the Tool interface, typed
// function tools whose JSON schema is inferred from a Go struct, the
// approval policy for write tools and its wire format, and the tool node
// that runs a model's calls as parallel graph tasks.
//
// A model node and the calls it requests are separate nodes:
//
//	var (
//		messages = llm.NewMessagesKey("messages")
//		calls    = tool.NewRecordsKey("tool_calls")
//	)
//	weather := tool.MustFunc("weather", "Current weather in a city.",
//		func(ctx context.Context, a struct {
//			City string `json:"city"`
//		}) (string, error) { ... }, tool.ReadOnly())
//	tools, err := tool.NewNode(tool.NodeConfig{
//		Messages: messages, Records: calls,
//		Tools:    []tool.Tool{weather, sendEmail, tool.Stop()},
//	})
//	b := graph.New(messages, calls)
//	b.AddNode("model", func(ctx context.Context, s graph.State) (graph.Output, error) {
//		req := &llm.Request{Messages: tool.ForModel(messages.Get(s), tool.Limit{}), Tools: tools.Specs()}
//		resp, err := llm.Call(ctx, model, req)
//		if err != nil {
//			return nil, err
//		}
//		return graph.Writes(graph.Append(messages, resp.Message)), nil
//	})
//	b.SetEntry("model")
//	tools.Wire(b, "tools", "model", graph.END)
//
// The node runs every call it is given. Asking a person first is the
// approval middleware's (middleware.Approval(policy) in agent/middleware,
// which every agent puts in front of its node): a call that needs approval
// stops the run with an interrupt carrying an ApprovalRequest (decode it
// with ApprovalFrom); resume the thread with a Decision (Approve, Edit or
// Reject) through graph.WithResume, or by interrupt ID through
// graph.WithResumeMap when several calls wait.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/llm"
)

// Tool is something a model can call.
//
// Call receives the arguments the model wrote (a JSON object) and returns
// the result text the model will see. An error becomes a tool error message
// for the model and does not fail the run, except context cancellation and
// graph interrupts, which pass through untouched. Return an *ArgumentError
// (see BadArguments) when the arguments are wrong, so the model is asked to
// fix the call.
type Tool interface {
	Info() Info
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// Info describes a tool.
type Info struct {
	// Name is what the model calls the tool by: unique among the tools
	// offered together.
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object (nil: no
	// arguments).
	Parameters json.RawMessage
	// ReadOnly marks a read tool: it changes nothing outside the run, so
	// it runs at once. Every other tool is a write tool and needs approval
	// unless the approval policy says otherwise.
	ReadOnly bool
}

// Spec returns the description a model is given.
func (i Info) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: i.Name, Description: i.Description, Parameters: i.Parameters}
}

// ArgumentError reports arguments a tool cannot use. The tool node sends it
// back to the model as a tool error message asking it to fix the call.
type ArgumentError struct {
	Tool string
	// Problem says what is wrong, in words a model can act on.
	Problem string
	Err     error
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %q: %s", e.Tool, e.Problem)
}

func (e *ArgumentError) Unwrap() error { return e.Err }

// BadArguments returns an *ArgumentError for tool.
func BadArguments(tool, format string, args ...any) error {
	return &ArgumentError{Tool: tool, Problem: fmt.Sprintf(format, args...)}
}

// IsArgumentError reports whether err is (or wraps) an *ArgumentError.
func IsArgumentError(err error) bool {
	_, ok := errors.AsType[*ArgumentError](err)
	return ok
}
