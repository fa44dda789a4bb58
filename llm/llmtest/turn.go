package llmtest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/llm"
)

// Turn is one scripted reply: text, reasoning, tool calls, or an error,
// with optional timing, usage and finish reason. Build one with Text,
// Reasoning, ToolCalls, JSON, Fail or StatusError and refine it with its
// With*, After, Paced and FailAfter methods, which return a changed copy.
// A Turn is a value: the same Turn may be scripted more than once.
type Turn struct {
	text      string
	reasoning string
	calls     []llm.ToolCall

	err     error // the whole reply fails with it
	status  int   // the whole reply fails with an *llm.APIError of this status
	message string

	delay  time.Duration
	pace   time.Duration
	usage  *llm.Usage
	finish llm.FinishReason

	cutAfter int // stream this many chunks, then fail with cutErr
	cutErr   error

	respond func(*Request) Turn // builds the reply from the request (Respond)
}

// Respond returns a reply that fn builds from the request that takes it,
// for a rule-based model that reads the conversation (the answers given,
// the tool results, what a person rejected) instead of replaying fixed
// text. fn runs while the model holds its lock, so it must not call the
// model; the turn it returns is used as any scripted turn is (its calls
// without an ID get one; a Respond turn it returns is not called again).
// Timing set on the Respond turn itself (After, Paced) applies when the
// built turn sets none.
func Respond(fn func(r *Request) Turn) Turn { return Turn{respond: fn} }

// Text returns a reply holding text: any text, including malformed JSON
// for testing how a caller copes with it.
func Text(s string) Turn { return Turn{text: s} }

// Reasoning returns a reply with reasoning ("thinking") text kept apart
// from the answer text.
func Reasoning(reasoning, text string) Turn { return Turn{reasoning: reasoning, text: text} }

// ToolCalls returns a reply asking for tool calls (and no text; add text
// with WithText). Build the calls with Call. A call without an ID gets one
// when the turn is scripted: "call_1", "call_2", ... in the order calls are
// added to the model, so IDs do not depend on the order in which parallel
// callers arrive. A reply that repeats (Rule.Repeat, Model.Otherwise)
// gives its calls new IDs each time ("call_3", then "call_3_2", ...).
func ToolCalls(calls ...llm.ToolCall) Turn {
	return Turn{calls: append([]llm.ToolCall(nil), calls...)}
}

// Call returns a tool call of the named tool with the given arguments, the
// JSON text the model "wrote" (it need not be valid, to test repairs). Its
// ID is left empty for the model to assign deterministically (see
// ToolCalls); set ID on the result to choose one.
func Call(name, argsJSON string) llm.ToolCall {
	return llm.ToolCall{Name: name, Arguments: argsJSON}
}

// JSON returns a reply whose text is v encoded as JSON, for testing
// llm.Decode and structured output. If v cannot be encoded, the reply
// fails with an error saying why.
func JSON(v any) Turn {
	b, err := json.Marshal(v)
	if err != nil {
		return Fail(fmt.Errorf("llmtest: JSON reply: cannot encode %T: %w", v, err))
	}
	return Text(string(b))
}

// Fail returns a reply that fails with err, as a provider would. Pass an
// *llm.APIError to test status handling (RetryAfter included), or use
// StatusError.
func Fail(err error) Turn {
	if err == nil {
		err = fmt.Errorf("llmtest: Fail was given a nil error")
	}
	return Turn{err: err}
}

// StatusError returns a reply that fails with an *llm.APIError of the given
// HTTP status and message, naming the model (a fresh error each time, so
// callers may keep it).
func StatusError(status int, message string) Turn {
	return Turn{status: status, message: message}
}

// WithText returns t with its answer text set to s.
func (t Turn) WithText(s string) Turn { t.text = s; return t }

// WithCalls returns t with calls added after its own (see ToolCalls for
// IDs), for a reply holding text and tool calls.
func (t Turn) WithCalls(calls ...llm.ToolCall) Turn {
	t.calls = append(append([]llm.ToolCall(nil), t.calls...), calls...)
	return t
}

// WithUsage returns t reporting u as its usage instead of the estimate
// (see Model). Requests is reported as given (llm.Call counts a request
// reported as 0 as 1).
func (t Turn) WithUsage(u llm.Usage) Turn { t.usage = &u; return t }

// WithFinish returns t ending with the given finish reason instead of
// FinishToolCalls (when it has calls) or FinishStop.
func (t Turn) WithFinish(r llm.FinishReason) Turn { t.finish = r; return t }

// After returns t delayed by d before anything is returned or streamed.
// Cancelling the context during the delay ends the call with the context's
// error, like a real provider.
func (t Turn) After(d time.Duration) Turn { t.delay = d; return t }

// Paced returns t waiting d before each streamed chunk (Generate waits the
// sum), for testing timeouts and cancellation in the middle of a reply.
func (t Turn) Paced(d time.Duration) Turn { t.pace = d; return t }

// FailAfter returns t failing with err after streaming its first n chunks,
// like a connection that drops mid-reply (n = 0: before any chunk).
// Generate fails with err.
func (t Turn) FailAfter(n int, err error) Turn {
	if err == nil {
		err = fmt.Errorf("llmtest: FailAfter was given a nil error")
	}
	t.cutAfter, t.cutErr = max(n, 0), err
	return t
}

// failure returns the error the whole turn fails with, if any.
func (t *Turn) failure(model string) error {
	switch {
	case t.err != nil:
		return t.err
	case t.status != 0:
		provider, name := splitName(model)
		return &llm.APIError{Provider: provider, Model: name, StatusCode: t.status, Message: t.message}
	}
	return nil
}

// clone returns t sharing no slice with it.
func (t Turn) clone() Turn {
	t.calls = append([]llm.ToolCall(nil), t.calls...)
	return t
}
