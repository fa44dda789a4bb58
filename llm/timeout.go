package llm

import (
	"context"
	"iter"
	"time"
)

// WithTimeout returns m with a per-call timeout: each Generate, and each
// Stream from the start of its iteration to its end (the time the caller
// spends between chunks included), must finish within d.
//
// When the timeout fires, the call fails with a *TimeoutError naming the
// model and the timeout ("openai:gpt-4o-mini: no complete reply within 30s
// (per-call timeout)"). It is retryable, so Retry(WithTimeout(m, d), p) gives
// every attempt a fresh d. When the caller's own context is cancelled or
// reaches its deadline first, the model's error passes through unchanged
// and is not retryable. A reply that completes is returned even if the
// timeout fires just after.
//
// d <= 0 means no timeout: m is returned unchanged. Name is m's name.
func WithTimeout(m Model, d time.Duration) Model {
	if d <= 0 {
		return orNil(m)
	}
	return &timeoutModel{m: orNil(m), d: d}
}

type timeoutModel struct {
	m Model
	d time.Duration
}

func (t *timeoutModel) Name() string { return t.m.Name() }

// Limits returns the wrapped model's limits (see LimitsOf).
func (t *timeoutModel) Limits() Limits { return LimitsOf(t.m) }

// start derives the call's context; the timeout is its cause, so it can be
// told apart from the caller's own cancellation.
func (t *timeoutModel) start(ctx context.Context) (context.Context, context.CancelFunc, *TimeoutError) {
	terr := &TimeoutError{Model: t.m.Name(), Timeout: t.d}
	tctx, cancel := context.WithTimeoutCause(ctx, t.d, terr)
	return tctx, cancel, terr
}

// fired reports whether the call's own timeout, and not the caller's
// context, ended it.
func fired(ctx, tctx context.Context, terr *TimeoutError) bool {
	return ctx.Err() == nil && context.Cause(tctx) == error(terr)
}

func (t *timeoutModel) Generate(ctx context.Context, req *Request) (*Response, error) {
	tctx, cancel, terr := t.start(ctx)
	defer cancel()
	resp, err := t.m.Generate(tctx, req)
	if err != nil {
		if fired(ctx, tctx, terr) {
			return nil, terr
		}
		return nil, err
	}
	return resp, nil
}

func (t *timeoutModel) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		tctx, cancel, terr := t.start(ctx)
		defer cancel()
		for c, err := range t.m.Stream(tctx, req) {
			if err != nil {
				if fired(ctx, tctx, terr) {
					err = terr
				}
				yield(Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		// A stream that ends quietly once its context is done was cut
		// short; it must not pass for a complete reply.
		if fired(ctx, tctx, terr) {
			yield(Chunk{}, terr)
		}
	}
}
