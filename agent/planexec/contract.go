package planexec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/llm"
)

// contractAttempts is how many replies a contract call reads before it
// gives up (as llm.GenerateJSON does by default).
const contractAttempts = llm.DefaultJSONAttempts

// complexity is the planner's assessment of a task; a complex task gets a
// second, deeper planning call.
type complexity string

const complexTask complexity = "complex"

// JSONSchema limits the value to the known ones (see llm.SchemaProvider).
func (complexity) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"simple", "moderate", string(complexTask)}}
}

// draft is the quick assessment's contract: the plan and how complex the
// task is.
type draft struct {
	Complexity complexity `json:"complexity"`
	Task       string     `json:"task"`
	Steps      []Step     `json:"steps"`
	Replan     []string   `json:"replan,omitempty"`
}

func (d draft) plan() Plan { return Plan{Task: d.Task, Steps: d.Steps, Replan: d.Replan} }

// intentReply is the intent check's contract.
type intentReply struct {
	Intent intent `json:"intent"`
	Reply  string `json:"reply,omitempty"`
}

// intent is what the user's input asks for: chat or a task.
type intent string

const chatIntent intent = "chat"

// JSONSchema limits the value to the known ones (see llm.SchemaProvider).
func (intent) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{string(chatIntent), "task"}}
}

// contractReply is what a contract call got: a value, or a call of the ask
// tool when asking was allowed.
type contractReply[T any] struct {
	value    T
	msg      llm.Message // the accepted reply
	ask      *llm.ToolCall
	requests int
	tokens   int
}

// callContract asks for a T the way llm.GenerateJSON does (a bad reply is
// answered with a correction and the model asked again, up to
// contractAttempts replies), with two additions the planner needs: check
// adds problems the schema cannot express (a dependency cycle, an unknown
// step), which are corrected the same way; and when canAsk is set, a reply
// calling the ask tool is returned as the ask instead of as a bad reply.
//
// Errors from the model end the loop at once. After the last bad reply
// the error matches llm.ErrContract and lists the reply's problems.
func callContract[T any](ctx context.Context, call modelCall, req *llm.Request, check func(T) []string, canAsk bool) (contractReply[T], error) {
	var out contractReply[T]
	msgs := slices.Clip(req.Messages)
	var probs []string
	for range contractAttempts {
		ask := *req
		ask.Messages = msgs
		resp, err := call.ask(ctx, &ask)
		if err != nil {
			return out, err
		}
		out.requests += int(max(resp.Usage.Requests, 1))
		out.tokens += tokensOf(resp.Usage)
		msg := resp.Message
		var fix string
		if c, ok := askCall(msg); ok {
			if canAsk {
				msg.ToolCalls = []llm.ToolCall{c} // one question at a time
				out.msg, out.ask = msg, &c
				return out, nil
			}
			probs = []string{"no more questions can be asked now"}
			fix = "No more questions can be asked: do not call " + AskToolName + ". Reply with only the JSON object, assuming what you must, and say in the task what you assumed."
		} else {
			v, err := llm.Decode[T](msg.Text())
			switch de, isDecode := errors.AsType[*llm.DecodeError](err); {
			case err == nil:
				if probs = check(v); len(probs) == 0 {
					out.value, out.msg = v, msg
					return out, nil
				}
				fix = correction(probs)
			case isDecode:
				probs = problemTexts(de)
				fix = de.Correction()
			default:
				return out, err
			}
		}
		if len(msg.ToolCalls) > 0 {
			// A reply whose calls will not run: keep only its text, so
			// the next request does not carry unanswered calls.
			msg = llm.Assistant(cmpOr(msg.Text(), "(called "+msg.ToolCalls[0].Name+")"))
		}
		msgs = append(msgs, msg, llm.User(fix))
		msgs = slices.Clip(msgs)
	}
	return out, fmt.Errorf("planexec: model %s gave no usable reply in %d attempts; the last reply's problems: %s (make the prompt say exactly what to send, or use a model that follows JSON schemas): %w",
		call.model, contractAttempts, strings.Join(probs, "; "), llm.ErrContract)
}

func askCall(msg llm.Message) (llm.ToolCall, bool) {
	for _, c := range msg.ToolCalls {
		if c.Name == AskToolName {
			return c, true
		}
	}
	return llm.ToolCall{}, false
}

func correction(probs []string) string {
	return "Your reply could not be used:\n- " + strings.Join(probs, "\n- ") +
		"\nReply again with only the corrected JSON object, with no other text and no code fences."
}

func problemTexts(de *llm.DecodeError) []string {
	out := make([]string, len(de.Problems))
	for i, p := range de.Problems {
		out[i] = p.Message
	}
	return out
}
