package llm

import (
	"context"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how Retry retries a failing model call. Zero fields take
// the defaults noted, so RetryPolicy{} is a sensible policy.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt: 3 means up to two retries.
	// Default (and any value below 1) 3; 1 means no retries.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry. Default 500ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the wait computed from the backoff, jitter included.
	// Default 30s, or InitialBackoff if that is longer.
	MaxBackoff time.Duration
	// Multiplier multiplies the wait after each retry. Default (and any
	// value below 1) 2.
	Multiplier float64
	// Jitter spreads each wait at random by up to this fraction either way
	// (0.2: 80% to 120% of the backoff), so many clients do not retry in
	// lockstep. Default 0.2; a negative value turns jitter off; values
	// above 1 mean 1.
	Jitter float64
	// MaxRetryAfter caps how long a provider's Retry-After
	// (APIError.RetryAfter) can make Retry wait. When a provider asks for a
	// wait, Retry waits at least that long, up to this cap, even when the
	// backoff is shorter. Default 60s.
	MaxRetryAfter time.Duration
	// Retryable decides which errors are retried. Default IsRetryable
	// (429, 408, 409, 5xx, network errors and per-call timeouts). Once the
	// caller's context is done nothing is retried, whatever it says.
	Retryable func(error) bool
	// OnRetry, when set, is called before each wait with the number of the
	// attempt that failed (1 for the first), its error and the wait, e.g.
	// to log retries. It runs on the calling goroutine.
	OnRetry func(attempt int, err error, wait time.Duration)
	// Rand returns a random number in [0, 1) for the jitter. Default
	// math/rand/v2's Float64; set it to make jitter repeatable in tests.
	Rand func() float64
}

// withDefaults returns p with every zero field set to its default.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts < 1 {
		p.MaxAttempts = 3
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = 500 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = max(30*time.Second, p.InitialBackoff)
	}
	if p.Multiplier < 1 {
		p.Multiplier = 2
	}
	switch {
	case p.Jitter == 0:
		p.Jitter = 0.2
	case p.Jitter < 0:
		p.Jitter = 0
	case p.Jitter > 1:
		p.Jitter = 1
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 60 * time.Second
	}
	if p.Retryable == nil {
		p.Retryable = IsRetryable
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	return p
}

// Backoff returns the wait before retry number n (1 for the first retry)
// under p, before jitter and Retry-After: InitialBackoff ×
// Multiplier^(n-1), capped at MaxBackoff.
func (p RetryPolicy) Backoff(n int) time.Duration {
	p = p.withDefaults()
	v := float64(p.InitialBackoff) * math.Pow(p.Multiplier, float64(max(n, 1)-1))
	if v >= float64(p.MaxBackoff) {
		return p.MaxBackoff
	}
	return time.Duration(v)
}

// wait returns how long to wait after attempt n failed with err. p must
// have its defaults.
func (p *RetryPolicy) wait(n int, err error) time.Duration {
	d := p.Backoff(n)
	if p.Jitter > 0 {
		r := min(max(p.Rand(), 0), 1)
		d = min(time.Duration(float64(d)*(1+p.Jitter*(2*r-1))), p.MaxBackoff)
	}
	if ra := retryAfter(err); ra > 0 {
		d = max(d, min(ra, p.MaxRetryAfter))
	}
	return d
}

// Retry returns m retrying failed calls as p says: errors p.Retryable
// accepts (by default 429, 5xx, network errors and per-call timeouts) are
// retried after an exponential backoff with jitter, waiting at least as
// long as a provider's Retry-After asks (up to p.MaxRetryAfter).
//
//   - Cancelling ctx during a wait returns at once with an error wrapping
//     ctx.Err() and the last model error. Once ctx is done nothing is
//     retried.
//   - An error that is not retryable is returned at once; after the first
//     attempt it is wrapped with the attempt count. When every attempt
//     fails, the error says how many were made and wraps the last one, so
//     errors.As still finds its *APIError.
//   - Stream retries only while nothing has reached the caller: once a
//     chunk has been yielded, a later error passes through unchanged.
//   - Usage.Requests counts every request: one for each failed attempt (one
//     per model tried when m is a Fallback chain) plus what the successful
//     attempt reports (at least one). Failed attempts' tokens are unknown
//     and not counted. A stream reports the count in its
//     usage chunks, or in an extra usage chunk at the end.
//
// Name is m's name. Retry(WithTimeout(m, d), p) retries calls that time out.
func Retry(m Model, p RetryPolicy) Model {
	return &retryModel{m: orNil(m), p: p.withDefaults()}
}

type retryModel struct {
	m Model
	p RetryPolicy
}

func (r *retryModel) Name() string { return r.m.Name() }

// Limits returns the wrapped model's limits (see LimitsOf).
func (r *retryModel) Limits() Limits { return LimitsOf(r.m) }

func (r *retryModel) Generate(ctx context.Context, req *Request) (*Response, error) {
	var before int64 // requests made by the failed attempts
	for attempt := 1; ; attempt++ {
		resp, err := r.m.Generate(ctx, req)
		if err == nil && resp == nil {
			err = fmt.Errorf("llm: model %s returned neither a reply nor an error", r.m.Name())
		}
		if err == nil {
			if before > 0 {
				resp.Usage.Requests = before + max(1, resp.Usage.Requests)
			}
			return resp, nil
		}
		before += requestsIn(err)
		if err := r.after(ctx, attempt, err); err != nil {
			return nil, err
		}
	}
}

func (r *retryModel) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		var before int64 // requests made by the failed attempts
		for attempt := 1; ; attempt++ {
			failed, done := relay(r.m.Stream(ctx, req), before, yield)
			if done {
				return
			}
			before += requestsIn(failed)
			if err := r.after(ctx, attempt, failed); err != nil {
				yield(Chunk{}, err)
				return
			}
		}
	}
}

// after decides what follows failed attempt n: it returns nil once it has
// waited for the next attempt, or the error to return.
func (r *retryModel) after(ctx context.Context, n int, err error) error {
	if ctx.Err() != nil {
		return err // the caller gave up; err is how the model saw it
	}
	if !r.p.Retryable(err) {
		if n == 1 {
			return err
		}
		return fmt.Errorf("llm: %s: attempt %d of %d failed with an error that is not retried: %w", r.m.Name(), n, r.p.MaxAttempts, err)
	}
	if n >= r.p.MaxAttempts {
		if n == 1 {
			return err
		}
		return fmt.Errorf("llm: %s: gave up after %d attempts (RetryPolicy.MaxAttempts): %w", r.m.Name(), n, err)
	}
	d := r.p.wait(n, err)
	if r.p.OnRetry != nil {
		r.p.OnRetry(n, err, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("llm: %s: stopped waiting to retry after attempt %d: %w (last error: %w)", r.m.Name(), n, ctx.Err(), err)
	}
}

// addRequests returns c with the requests of earlier failed attempts added
// to its usage's request count. It copies the usage: the chunk's pointer
// belongs to the model that sent it.
func addRequests(c Chunk, failed int64) Chunk {
	u := *c.Usage
	u.Requests = failed + max(1, u.Requests)
	c.Usage = &u
	return c
}

// relay passes one attempt's stream to yield, adding before (the requests
// of earlier failed attempts) to its usage, or sending a usage chunk of its
// own when the stream reported none. It returns the attempt's error only
// when the attempt failed before yielding anything, so the caller may try
// again (another attempt, another model); otherwise the caller's stream is
// over (done): it succeeded, the consumer stopped, or a partial reply
// failed, and that error has been yielded, since a partial reply cannot be
// taken back.
func relay(stream iter.Seq2[Chunk, error], before int64, yield func(Chunk, error) bool) (failed error, done bool) {
	started, counted := false, false
	for c, err := range stream {
		if err != nil {
			failed = err
			break
		}
		if before > 0 && c.Usage != nil {
			c = addRequests(c, before)
			counted = true
		}
		started = true
		if !yield(c, nil) {
			return nil, true
		}
	}
	switch {
	case failed == nil:
		if before > 0 && !counted {
			yield(Chunk{Usage: &Usage{Requests: before + 1}}, nil)
		}
		return nil, true
	case started:
		yield(Chunk{}, failed)
		return nil, true
	}
	return failed, false
}
