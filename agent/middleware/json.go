package middleware

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/llm"
)

// GenerateJSON asks for a T as llm.GenerateJSON does (a schema'd request,
// bad replies corrected and asked again), through the model hooks of c:
// they see call's request and the accepted reply as one model call, and
// the value is decoded from the reply they return, so a hook that edits
// the reply (redaction) edits the value too. For nodes of your own and
// agents' structured calls (the builder's judge, an app's assessments).
func GenerateJSON[T any](ctx context.Context, c *Chain, call *ModelCall, opts ...llm.JSONOption) (*llm.JSONResult[T], error) {
	var out *llm.JSONResult[T]
	resp, err := c.WrapModel(func(ctx context.Context, mc *ModelCall) (*llm.Response, error) {
		res, err := llm.GenerateJSON[T](ctx, mc.Model, mc.Final(), opts...)
		out = res
		if err != nil {
			return nil, err
		}
		return res.Response, nil
	})(ctx, call)
	if err != nil {
		if out == nil {
			out = &llm.JSONResult[T]{}
		}
		return out, err
	}
	asked := out != nil
	if !asked { // a hook answered without asking the model
		out = &llm.JSONResult[T]{}
	}
	v, derr := llm.Decode[T](resp.Message.Text())
	switch {
	case derr == nil:
		out.Value, out.Response = v, resp
	case asked && out.Response == resp:
		// The reply the model gave, unchanged: its value stands.
	default:
		return out, fmt.Errorf("middleware: the reply the chain returned does not decode: %w", derr)
	}
	return out, nil
}
