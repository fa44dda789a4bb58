package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/trellis-agents/trellis/internal/retryafter"
	"github.com/trellis-agents/trellis/llm"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// maxPlainMessage bounds the message taken from a body that is not JSON (a
// proxy's HTML page, say).
const maxPlainMessage = 300

// errTruncated marks a stream that ended before the model finished.
var errTruncated = errors.New("the stream ended before the model finished (no finish_reason received)")

// callError turns what the SDK returned into the error callers see:
// the context's error when ctx is done, an *llm.APIError otherwise. raw is
// the HTTP response, when one arrived.
func (m *Model) callError(ctx context.Context, raw *http.Response, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if le, ok := errors.AsType[*llm.LimitError](err); ok {
		return le // a body over the limit: not the server's error, and not worth retrying
	}
	if raw != nil && raw.StatusCode >= 400 {
		return m.httpError(raw, err)
	}
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		return m.eventError(se)
	}
	// No status: a network failure, or a body that could not be read or
	// decoded. Both are worth another try.
	return &llm.APIError{Provider: m.provider, Model: m.model, Err: err}
}

// httpError reads the error body the SDK left on raw (it puts it back
// after reading) rather than trusting the SDK's decoding, which needs the
// official {"error": {...}} shape; compatible servers vary.
func (m *Model) httpError(raw *http.Response, err error) *llm.APIError {
	ae := &llm.APIError{
		Provider:   m.provider,
		Model:      m.model,
		StatusCode: raw.StatusCode,
		RetryAfter: retryafter.Parse(raw.Header, time.Now()),
		Err:        err,
	}
	if raw.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(raw.Body, maxErrorBody))
		ae.Type, ae.Code, ae.Message = parseErrorBody(body)
	}
	return ae
}

// eventError maps an error event sent in the middle of a stream
// ({"error": {...}} after a 200). A numeric code that is an HTTP status
// becomes the status; otherwise the status stays 0, which retries treat
// like a broken connection.
func (m *Model) eventError(se *ssestream.StreamError) *llm.APIError {
	ae := &llm.APIError{Provider: m.provider, Model: m.model, Err: se}
	ae.Type, ae.Code, ae.Message = parseErrorBody(se.Event.Data)
	if n, err := strconv.Atoi(ae.Code); err == nil && n >= 400 && n < 600 {
		ae.StatusCode = n
	}
	if ae.Message == "" {
		ae.Message = "the server sent an error event mid-stream"
	}
	return ae
}

// truncated reports a stream that ended without a finish reason, after
// events events. A reply that was no event stream at all is named as such:
// the server may not support streaming.
func (m *Model) truncated(raw *http.Response, events int) *llm.APIError {
	msg := errTruncated.Error()
	if raw != nil && events == 0 {
		if ct := raw.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			msg += fmt.Sprintf("; the server answered with Content-Type %q, not an event stream: it may not support streaming (use Generate)", ct)
		}
	}
	return &llm.APIError{
		Provider: m.provider,
		Model:    m.model,
		Message:  msg,
		Err:      errors.Join(errTruncated, io.ErrUnexpectedEOF),
	}
}

// parseErrorBody reads the error's type, code and message from the shapes
// servers send: {"error": {...}} (OpenAI, DeepSeek, Ollama), {"error":
// "text"}, a top-level {"message", "type", "code"} (vLLM), {"detail": ...}
// (FastAPI servers), or anything else as plain text.
func parseErrorBody(body []byte) (typ, code, msg string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return "", "", ""
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return "", "", plainText(body)
	}
	obj := top
	if e, ok := top["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(e, &inner) == nil && inner != nil {
			obj = inner
		} else {
			return "", "", scalar(e)
		}
	}
	typ, code, msg = scalar(obj["type"]), scalar(obj["code"]), scalar(obj["message"])
	if msg == "" {
		msg = scalar(obj["detail"])
	}
	return typ, code, msg
}

// scalar renders a JSON value as text: strings unquoted, null as "",
// anything else compacted.
func scalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

func plainText(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) <= maxPlainMessage {
		return s
	}
	cut := maxPlainMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
