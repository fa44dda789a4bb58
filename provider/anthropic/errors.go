package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trellis-agents/trellis/internal/retryafter"
	"github.com/trellis-agents/trellis/llm"
)

// providerName is the Provider of every APIError this package returns.
const providerName = "anthropic"

// statusOfType gives the HTTP status the API uses for each error type. An
// error event inside a stream arrives on a 200 response, so its status is
// taken from its type (overloaded_error: 529, which llm retries).
var statusOfType = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// wrapErr turns an SDK or transport error into an *llm.APIError, or into
// the context's error when ctx is done.
func (m *Model) wrapErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if le, ok := errors.AsType[*llm.LimitError](err); ok {
		return le // a body over the limit: not the server's error, and not worth retrying
	}
	ae := &llm.APIError{Provider: providerName, Model: m.model, Err: err}
	se, ok := errors.AsType[*sdk.Error](err)
	if !ok {
		return ae
	}
	ae.StatusCode = se.StatusCode
	ae.Type = string(se.Type())
	ae.Code = string(se.ErrorCode())
	ae.Message = se.Message
	if se.Response != nil {
		ae.RetryAfter = retryafter.Parse(se.Response.Header, time.Now())
	}
	if ae.StatusCode < 400 { // an error event in a 200 stream
		if s, ok := statusOfType[ae.Type]; ok {
			ae.StatusCode = s
		} else {
			ae.StatusCode = http.StatusInternalServerError
		}
	}
	if ae.Message == "" {
		ae.Message = fallbackMessage(se)
	}
	return ae
}

// fallbackMessage describes an error response without an Anthropic error
// body (a proxy's HTML page, an empty body).
func fallbackMessage(se *sdk.Error) string {
	raw := strings.TrimSpace(se.RawJSON())
	if len(raw) > 200 {
		raw = raw[:200] + "..."
	}
	if raw == "" {
		return http.StatusText(se.StatusCode)
	}
	return raw
}

// truncated is the error for a stream that ended without message_stop: the
// connection was cut, so the reply is incomplete (retryable).
func (m *Model) truncated() error {
	return &llm.APIError{
		Provider: providerName,
		Model:    m.model,
		Message:  "the stream ended before message_stop; the reply is incomplete",
		Err:      io.ErrUnexpectedEOF,
	}
}
