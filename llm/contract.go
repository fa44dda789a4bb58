package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ErrContract is matched (errors.Is) by the *ContractError GenerateJSON
// returns when the model never produced valid JSON.
var ErrContract = errors.New("llm: the model did not reply with the expected JSON")

// DefaultJSONAttempts is how many replies GenerateJSON reads before giving
// up, unless JSONMaxAttempts says otherwise.
const DefaultJSONAttempts = 3

// JSONResult is what GenerateJSON got.
type JSONResult[T any] struct {
	// Value is the decoded reply (the zero T on error).
	Value T
	// Response is the reply Value was decoded from (nil on error).
	Response *Response
	// Rejected lists, in order, each bad reply followed by the correction
	// message sent after it. Append them to the history to keep the
	// conversation as the model saw it, or drop them to keep it short.
	Rejected []Message
	// Attempts counts the model's replies, good and bad.
	Attempts int
	// Usage sums the usage of every attempt (each was also recorded on the
	// running graph task by Call).
	Usage Usage
}

// JSONOption configures GenerateJSON.
type JSONOption func(*jsonOptions)

type jsonOptions struct {
	attempts int
	format   bool
	correct  func(*DecodeError) Message
}

// JSONMaxAttempts sets how many bad replies in a row GenerateJSON accepts
// before failing (default DefaultJSONAttempts). Values below 1 mean 1: ask
// once, correct never.
func JSONMaxAttempts(n int) JSONOption {
	return func(o *jsonOptions) { o.attempts = max(n, 1) }
}

// JSONResponseFormat sets whether GenerateJSON fills in the request's
// ResponseFormat with T's schema when the request has none (default true).
// Turn it off for servers that reject json_schema response formats; the
// reply is then checked and corrected all the same, so say in the prompt
// what JSON you expect.
func JSONResponseFormat(set bool) JSONOption {
	return func(o *jsonOptions) { o.format = set }
}

// JSONCorrection replaces the message GenerateJSON sends after a bad reply.
// build receives the reply's problems; (*DecodeError).Correction gives the
// default text. A message without an ID gets one.
func JSONCorrection(build func(*DecodeError) Message) JSONOption {
	return func(o *jsonOptions) { o.correct = build }
}

// GenerateJSON asks m for a T and decodes the reply with Decode.
//
// The model is called through Call, so tokens stream to the graph and
// usage is recorded per attempt. Unless the request already has a
// ResponseFormat, or JSONResponseFormat(false) is given, it asks for T's
// schema (SchemaFor); providers take only object schemas, so for other
// types (slices, scalars) no format is set.
//
// A reply that does not decode is answered inside this call, not as a
// graph step: the bad reply and a correction message (the problems, the
// expected shape, and the instruction to send only the JSON) are appended
// to the conversation and the model is asked again. A good reply ends the
// loop. After JSONMaxAttempts bad replies in a row it fails with a
// *ContractError holding the last reply and its problems.
//
// The result is never nil: on error it still carries Rejected (and
// Attempts and Usage), so the caller can keep the bad replies in its
// history. Errors from the model (network, API, cancellation) are returned
// as they come, ending the loop without counting as bad replies. The
// caller's req is not modified.
func GenerateJSON[T any](ctx context.Context, m Model, req *Request, opts ...JSONOption) (*JSONResult[T], error) {
	res := &JSONResult[T]{}
	o := jsonOptions{attempts: DefaultJSONAttempts, format: true, correct: defaultCorrection}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := contractFor(reflect.TypeFor[T]())
	if err != nil {
		return res, err
	}
	work := *req
	if work.ResponseFormat == nil && o.format && c.format != nil {
		f := *c.format
		f.Schema = bytes.Clone(f.Schema) // the cached copy stays safe from providers
		work.ResponseFormat = &f
	}
	msgs := req.Messages[:len(req.Messages):len(req.Messages)] // appends copy
	var last *DecodeError
	for res.Attempts < o.attempts {
		if err := ctx.Err(); err != nil {
			return res, context.Cause(ctx)
		}
		ask := work
		ask.Messages = msgs
		resp, err := Call(ctx, m, &ask)
		if err != nil {
			return res, err
		}
		res.Attempts++
		res.Usage = res.Usage.Add(resp.Usage)
		var v T
		derr := c.decode(resp.Message.Text(), &v)
		if derr == nil {
			res.Value, res.Response = v, resp
			return res, nil
		}
		if resp.FinishReason == FinishLength {
			derr.Problems = append([]Problem{{Message: "the reply was cut off at the token limit; make it shorter"}}, derr.Problems...)
		}
		last = derr
		fix := o.correct(derr)
		if fix.ID == "" {
			fix.ID = NewID()
		}
		res.Rejected = append(res.Rejected, resp.Message, fix)
		msgs = append(msgs, resp.Message, fix)
		msgs = msgs[:len(msgs):len(msgs)]
	}
	return res, &ContractError{
		Model:    m.Name(),
		Type:     c.typ.String(),
		Attempts: res.Attempts,
		Reply:    last.Reply,
		Problems: last.Problems,
		Rejected: res.Rejected,
		last:     last,
	}
}

func defaultCorrection(e *DecodeError) Message { return User(e.Correction()) }

// ContractError reports that a model gave no valid JSON reply in the
// attempts it had. It matches ErrContract and unwraps to the last reply's
// *DecodeError.
type ContractError struct {
	// Model is the model's name; Type the Go type asked for.
	Model string
	Type  string
	// Attempts counts the bad replies.
	Attempts int
	// Reply is the last reply, and Problems what is wrong with it.
	Reply    string
	Problems []Problem
	// Rejected holds the bad replies and correction messages in order, as
	// JSONResult.Rejected does.
	Rejected []Message

	last *DecodeError
}

// Error names the model and the type, lists the last reply's problems and
// says what to change.
func (e *ContractError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return fmt.Sprintf("llm: model %s gave no valid JSON for %s in %d attempts; the last reply's problems: %s "+
		"(make the prompt say exactly what JSON to send, with an example; use a model or provider that "+
		"enforces the schema; or allow more attempts with JSONMaxAttempts)",
		e.Model, e.Type, e.Attempts, strings.Join(msgs, "; "))
}

// Is reports whether target is ErrContract.
func (e *ContractError) Is(target error) bool { return target == ErrContract }

// Unwrap returns the last reply's *DecodeError.
func (e *ContractError) Unwrap() error {
	if e.last == nil {
		return nil
	}
	return e.last
}
