package react

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// DefaultOutputPrompt is the instruction that asks for the structured
// final answer, unless Config.OutputPrompt replaces it. The JSON schema of
// the output type is always added after it.
const DefaultOutputPrompt = "Give your final answer now as a single JSON object that follows the schema below, " +
	"using what this conversation has established. Reply with the JSON only: no other text and no code fences."

// Output is a structured final answer: set Config.Output to one made by
// OutputTo.
type Output interface {
	stateKey() graph.AnyKey
	problem() error
	schema() json.RawMessage
	// generate asks m for the answer and returns the write that stores
	// it and the reply it was decoded from.
	generate(ctx context.Context, m llm.Model, req *llm.Request) (graph.Write, llm.Message, error)
}

// OutputTo makes the agent finish with a structured answer of type T,
// stored in key (written with Set, so through key's reducer).
//
// When the loop ends (a reply without tool calls, the stop tool, or the
// step budget), one more step, the answer node, sends the system prompt,
// the history and an instruction (Config.OutputPrompt plus T's JSON
// schema) with tool use turned off, through llm.GenerateJSON: the request
// carries T's schema as its response format (unless opts turn that off
// with llm.JSONResponseFormat(false)) and a reply that does not decode is
// corrected inside that step, up to llm.DefaultJSONAttempts replies (see
// llm.JSONMaxAttempts). If no reply decodes, the run fails with the
// *llm.ContractError (errors.Is(err, llm.ErrContract)).
//
// The history is not changed by this step: the instruction, rejected
// replies, corrections and the JSON reply stay out of Messages, which
// keeps the model's own final text as the last message, so a thread's next
// turn reads as a conversation. The key holds the last completed turn's
// answer.
//
// The step budget reserves the answer step (see Config.FailOnStepLimit).
// Only when the run has no step left after the first model step (a step
// limit of 1) does the model node ask for the JSON answer itself, instead
// of a text answer; then the JSON reply is the history's final message.
//
// T must have a JSON schema (see llm.SchemaFor) and key must not be nil;
// New reports either problem. List key in a parent graph's keys to read
// the answer there (Config.StateKeys includes it).
func OutputTo[T any](key *graph.Key[T], opts ...llm.JSONOption) Output {
	o := &jsonOutput[T]{key: key, opts: opts}
	if key == nil {
		o.err = fmt.Errorf("react: OutputTo[%s] was given a nil key; declare one with graph.NewKey[%[1]s](name)", reflect.TypeFor[T]())
		return o
	}
	s, err := llm.SchemaFor[T]()
	if err != nil {
		o.err = fmt.Errorf("react: the output type %s cannot be a structured answer: %w", reflect.TypeFor[T](), err)
		return o
	}
	o.raw = s
	return o
}

type jsonOutput[T any] struct {
	key  *graph.Key[T]
	opts []llm.JSONOption
	raw  json.RawMessage
	err  error
}

func (o *jsonOutput[T]) stateKey() graph.AnyKey {
	if o.key == nil {
		return nil
	}
	return o.key
}

func (o *jsonOutput[T]) problem() error          { return o.err }
func (o *jsonOutput[T]) schema() json.RawMessage { return o.raw }

func (o *jsonOutput[T]) generate(ctx context.Context, m llm.Model, req *llm.Request) (graph.Write, llm.Message, error) {
	res, err := llm.GenerateJSON[T](ctx, m, req, o.opts...)
	if err != nil {
		return graph.Write{}, llm.Message{}, err
	}
	return o.key.Set(res.Value), res.Response.Message, nil
}
