package tool

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/trellis-agents/trellis/llm"
)

// StopName is the name of the built-in stop tool.
const StopName = "stop"

type stopArgs struct {
	Answer string `json:"answer" jsonschema:"the final answer to give the user"`
}

// stopTool is the built-in stop tool; the tool node recognizes its type.
type stopTool struct {
	*funcTool[stopArgs, string]
}

var stopSchema = func() *schema {
	s, err := schemaFor(reflect.TypeFor[stopArgs]())
	if err != nil {
		panic("tool: the stop tool's schema: " + err.Error())
	}
	return s
}()

// Stop returns the built-in stop tool. A model calls it, with its final
// answer, to end the agent loop: a Node wired with Wire that has this tool
// goes to its next node after a turn that called it, instead of back to the
// model. The call is recorded like any other; read the answer with
// Stopped. It is a read tool (it runs at once); do not put it under
// approval, since the loop ends on the call whatever the answer.
func Stop() Tool {
	return &stopTool{MustFunc(StopName,
		"End the task and give the final answer. Call this once the task is complete (or cannot be completed), with the answer for the user.",
		func(_ context.Context, a stopArgs) (string, error) {
			return "Stopped. The final answer has been recorded.", nil
		}, ReadOnly()).(*funcTool[stopArgs, string])}
}

// Stopped reports whether the last assistant message in msgs called the
// stop tool with valid arguments, and the answer it gave. It looks only at
// the call, not at its result, so every task of the turn reaches the same
// verdict.
func Stopped(msgs []llm.Message) (answer string, ok bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			if c.Name != StopName {
				continue
			}
			args := normalizeArgs(json.RawMessage(c.Arguments))
			if stopSchema.check(StopName, args) != nil {
				continue
			}
			var a stopArgs
			if json.Unmarshal(args, &a) == nil {
				return a.Answer, true
			}
		}
		return "", false
	}
	return "", false
}

// IsStop reports whether t is the built-in stop tool (made by Stop), for
// agents that wire the loop themselves and must route on it.
func IsStop(t Tool) bool {
	_, ok := t.(*stopTool)
	return ok
}
