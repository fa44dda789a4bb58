package graph

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"syscall"
	"time"
)

// RetryPolicy retries a failing node. Set it per node with WithRetry; nodes
// have none unless set. Zero fields take the defaults noted.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt: 3 means up to two retries.
	// Default 3.
	MaxAttempts int
	// InitialInterval is the wait before the first retry. Default 500ms.
	InitialInterval time.Duration
	// BackoffFactor multiplies the wait after each retry. Default 2.
	BackoffFactor float64
	// MaxInterval caps the wait. Default 30s, or InitialInterval if longer.
	MaxInterval time.Duration
	// Jitter, when true, waits a random duration between half and all of
	// the computed interval, so many clients do not retry in lockstep.
	Jitter bool
	// RetryOn decides which errors are retried. Default IsTransient.
	RetryOn func(error) bool
}

// retryPolicies are a node's policies, tried in order.
type retryPolicies []RetryPolicy

// pick returns the policy that retries attempt's error, or nil.
func (ps retryPolicies) pick(attempt int, err error) *RetryPolicy {
	for i := range ps {
		p := &ps[i]
		if p.RetryOn != nil && !p.RetryOn(err) || p.RetryOn == nil && !IsTransient(err) {
			continue
		}
		if p.shouldRetry(attempt, err) {
			return p
		}
		return nil // the first policy that matches decides
	}
	return nil
}

// Attempt reports which attempt of the running node this is: 1 for the
// first, 2 for the first retry (see WithRetry); 0 outside a node.
func Attempt(ctx context.Context) int {
	if t := taskFrom(ctx); t != nil {
		return int(t.attempts)
	}
	return 0
}

func (p *RetryPolicy) shouldRetry(attempt int, err error) bool {
	maxAttempts := p.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = 3
	}
	if attempt >= maxAttempts {
		return false
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		return false // a panic is a programming error
	}
	if p.RetryOn != nil {
		return p.RetryOn(err)
	}
	return IsTransient(err)
}

// Interval returns the wait before retry number n (1 for the first retry),
// before jitter.
func (p *RetryPolicy) Interval(n int) time.Duration {
	d := p.InitialInterval
	if d == 0 {
		d = 500 * time.Millisecond
	}
	f := p.BackoffFactor
	if f == 0 {
		f = 2
	}
	maxI := p.MaxInterval
	if maxI == 0 {
		maxI = max(30*time.Second, d) // the default cap never shortens an explicit interval
	}
	v := float64(d) * math.Pow(f, float64(n-1))
	if v > float64(maxI) {
		return maxI
	}
	return time.Duration(v)
}

func (p *RetryPolicy) wait(ctx context.Context, attempt int) error {
	d := p.Interval(attempt)
	if p.Jitter {
		d = d/2 + rand.N(d/2+1)
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// IsTransient reports whether err looks like a passing failure worth
// retrying: a network error (timeout, connection refused or reset, an
// unexpected EOF), or an error carrying an HTTP status of 429 or 5xx through
// a StatusCode() int method. Context cancellation, panics and every other
// error are not transient: retrying a programming error only repeats it.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var sc interface{ StatusCode() int }
	if errors.As(err, &sc) {
		c := sc.StatusCode()
		return c == 429 || (c >= 500 && c <= 599)
	}
	var tr interface{ Transient() bool }
	if errors.As(err, &tr) {
		return tr.Transient()
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return ne.Timeout()
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}
