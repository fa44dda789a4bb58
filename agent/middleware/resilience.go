package middleware

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/llm"
)

// Retry returns a middleware that retries each model call by policy p. It
// wraps the call's model with llm.Retry (one implementation of retries):
// a stream is retried only while nothing has reached the stream, and
// every attempt's request is counted in the usage.
func Retry(p llm.RetryPolicy) Middleware {
	return ModelFunc("retry", func(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error) {
		call.Model = llm.Retry(call.Model, p)
		return next(ctx, call)
	})
}

// Fallback returns a middleware that answers each model call with the
// call's model and, when it fails with an error moveOn accepts (nil:
// every error), with each of models in turn. It wraps the call's model with
// llm.FallbackIf (one implementation of fallback).
func Fallback(moveOn func(error) bool, models ...llm.Model) (Middleware, error) {
	if len(models) == 0 {
		return nil, errors.New("fallback: give at least one model to fall back on")
	}
	for i, m := range models {
		if m == nil {
			return nil, fmt.Errorf("fallback: model %d is nil", i)
		}
	}
	return ModelFunc("fallback", func(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error) {
		call.Model = llm.FallbackIf(moveOn, append([]llm.Model{call.Model}, models...)...)
		return next(ctx, call)
	}), nil
}
