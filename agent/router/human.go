package router

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// QuestionKind is the Kind of every Question, so code reading a run's
// interrupts can tell the model's questions from tool approvals.
const QuestionKind = "ask_human"

// Question is the payload of the interrupt an ask_human call raises
// (graph.InterruptInfo.Payload, as JSON). Answer it with the person's
// reply: graph.WithResume("the answer"), or graph.WithResumeMap by the
// interrupt's ID when several wait. A string answer reaches the model as
// it is; any other JSON value as its JSON text.
type Question struct {
	// Kind is QuestionKind.
	Kind string `json:"kind"`
	// CallID is the ask_human call's ID.
	CallID   string `json:"call_id"`
	Question string `json:"question"`
}

// QuestionFrom decodes the question an interrupt carries. It reports
// false for interrupts that are not ask_human questions.
func QuestionFrom(in graph.InterruptInfo) (Question, bool) {
	var q Question
	if json.Unmarshal(in.Payload, &q) != nil || q.Kind != QuestionKind {
		return Question{}, false
	}
	return q, true
}

type askArgs struct {
	Question string `json:"question" jsonschema:"one clear question, with what the person needs to know to answer it"`
}

// askHumanTool returns the ask_human tool: a read tool whose call stops
// the run with a Question and, once resumed, returns the answer.
func askHumanTool() tool.Tool {
	return tool.MustFunc(AskHumanName,
		"Ask the person you are working for a question and wait for the answer, which is this call's result. "+
			"Use it when only they can give the information or make the decision you need.",
		func(ctx context.Context, a askArgs) (string, error) {
			if strings.TrimSpace(a.Question) == "" {
				return "", tool.BadArguments(AskHumanName, `"question" is empty; write the question`)
			}
			id, _ := tool.CallID(ctx) // the tool node sets it
			answer, err := graph.Interrupt[json.RawMessage](ctx, Question{Kind: QuestionKind, CallID: id, Question: a.Question})
			if err != nil {
				return "", err
			}
			return answerText(answer), nil
		}, tool.ReadOnly())
}

// answerText turns a person's answer (JSON) into the call's result.
func answerText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return "(The person gave an empty answer.)"
		}
		return s
	}
	if t := strings.TrimSpace(string(raw)); t != "" && t != "null" {
		return t
	}
	return "(The person gave an empty answer.)"
}
