package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// panicError is the error of a tool call (or argument check) that
// panicked. The tool node turns it into a tool error message and logs it
// with its stack.
type panicError struct {
	Tool  string
	Value any
	Stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("tool %q panicked: %v", e.Tool, e.Value)
}

// invoke runs the tool within a slot of the node's parallelism bound, with
// the state in its context, turning a panic into a *panicError.
func (n *Node) invoke(ctx context.Context, e *entry, s graph.State, args json.RawMessage, rec *Record) (result string, err error) {
	select {
	case n.sem <- struct{}{}:
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	start := time.Now()
	defer func() {
		rec.Duration = time.Since(start)
		<-n.sem
		if v := recover(); v != nil {
			result, err = "", &panicError{Tool: e.info.Name, Value: v, Stack: debug.Stack()}
		}
	}()
	return e.tool.Call(withCallID(WithState(ctx, s), rec.CallID), args)
}

// failure logs a failed call and returns the tool error message the model
// receives.
func (n *Node) failure(ctx context.Context, call llm.ToolCall, err error) string {
	attrs := []slog.Attr{
		slog.String("tool", call.Name),
		slog.String("call_id", call.ID),
		slog.String("node", graph.NodeName(ctx)),
		slog.Int("step", graph.Step(ctx)),
		slog.String("error", err.Error()),
	}
	if IsArgumentError(err) {
		// The model's mistake, reported to it; nothing for operators.
		return fixArguments(err)
	}
	if pe, ok := err.(*panicError); ok {
		n.log.LogAttrs(ctx, slog.LevelError, "tool call panicked", append(attrs, slog.String("stack", string(pe.Stack)))...)
		return fmt.Sprintf("Error: tool %q failed unexpectedly (it panicked: %v). Do not assume it took effect.", call.Name, pe.Value)
	}
	n.log.LogAttrs(ctx, slog.LevelWarn, "tool call failed", attrs...)
	return fmt.Sprintf("Error: tool %q failed: %v", call.Name, err)
}
