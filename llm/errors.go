package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// APIError is a failed model request as a provider reported it. Providers
// return it (wrapped or not) for every HTTP error, so retries and callers can
// read the status without knowing the SDK.
type APIError struct {
	// Provider and Model say who failed ("openai", "gpt-4o-mini").
	Provider string
	Model    string
	// StatusCode is the HTTP status (0 when the request never got one).
	StatusCode int
	// Type and Code are the provider's error type and code, when given.
	Type string
	Code string
	// Message is the provider's error message.
	Message string
	// RetryAfter is how long the provider asked to wait (Retry-After or
	// retry-after-ms), or 0.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s model %q", e.Provider, e.Model)
	if e.StatusCode != 0 {
		s += fmt.Sprintf(": HTTP %d", e.StatusCode)
	}
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if hint := e.hint(); hint != "" {
		s += " (" + hint + ")"
	}
	return s
}

func (e *APIError) hint() string {
	switch e.StatusCode {
	case 401, 403:
		return "check the API key and its permissions"
	case 404:
		return "check the model name and the base URL"
	case 429:
		return "rate limited; retried with backoff if a retry policy is set"
	}
	return ""
}

func (e *APIError) Unwrap() error { return e.Err }

// Transient reports the same as Retryable. It lets the graph's node retry
// policy (graph.IsTransient) recognise provider errors too.
func (e *APIError) Transient() bool { return e.Retryable() }

// Retryable reports whether sending the same request again may succeed:
// 408, 409, 429 and 5xx statuses, and requests that got no status at all
// (network errors).
func (e *APIError) Retryable() bool {
	switch {
	case e.StatusCode == 0:
		return e.Err != nil && !errors.Is(e.Err, context.Canceled) && !errors.Is(e.Err, context.DeadlineExceeded)
	case e.StatusCode == 408, e.StatusCode == 409, e.StatusCode == 429:
		return true
	default:
		return e.StatusCode >= 500
	}
}

// TimeoutError is returned by a model wrapped with WithTimeout when its
// per-call timeout fires before the reply is complete. It is retryable (the
// next attempt gets a fresh timeout), unlike the cancellation or deadline of
// the caller's own context, which WithTimeout passes through unchanged.
// errors.Is(err, context.DeadlineExceeded) holds for it.
type TimeoutError struct {
	// Model is the name of the model that timed out ("openai:gpt-4o-mini").
	Model string
	// Timeout is the per-call timeout that fired.
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no complete reply within %s (per-call timeout)", e.Model, e.Timeout)
}

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// Transient reports true, so the graph's node retry policy retries it too.
func (e *TimeoutError) Transient() bool { return true }

// IsRetryable reports whether err is worth retrying: a retryable APIError,
// a per-call TimeoutError, or a network error. Context cancellation is never
// retryable. A caller's own expired deadline may look like a network
// timeout here; Retry and Fallback check the caller's context themselves
// and never retry once it is done.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if _, ok := errors.AsType[*TimeoutError](err); ok {
		return true
	}
	if ae, ok := errors.AsType[*APIError](err); ok {
		return ae.Retryable()
	}
	_, isNet := errors.AsType[net.Error](err)
	return isNet
}

// retryAfter returns the wait a provider asked for, or 0.
func retryAfter(err error) time.Duration {
	if ae, ok := errors.AsType[*APIError](err); ok {
		return ae.RetryAfter
	}
	return 0
}
