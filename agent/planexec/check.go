package planexec

import (
	"context"
	"errors"
	"log/slog"
	"text/template"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// verdict is the judge's contract: is the step done, and what is missing.
type verdict struct {
	Done    bool   `json:"done"`
	Missing string `json:"missing,omitempty" jsonschema:"what is still to do when not done"`
}

// judgeShape shows the judge the JSON it must send.
const judgeShape = `{"done": false, "missing": "..."}`

// retryMarker starts what a step sent back to work is told about its
// earlier attempt.
const retryMarker = "The check of this step found its result incomplete. Missing: "

// judgeUse counts the judge's requests and tokens for one step.
type judgeUse struct{ requests, tokens int }

// judge asks the Judge phase whether answer meets st's done_when. It
// reports false when the judge could not tell (its model failed, or never
// gave a usable verdict): the step then keeps its result.
func (a *agent) judge(ctx context.Context, plan Plan, st Step, answer string, use *judgeUse) (verdict, bool) {
	d := a.data()
	d.Task, d.Steps, d.Step = plan.Task, plan.Steps, st
	sys := a.render(ctx, func(t *templates) *template.Template { return t.Judge }, d) +
		"\nReply with only a JSON object of this shape:\n" + judgeShape
	req := &llm.Request{Messages: []llm.Message{llm.System(a.system(sys)), llm.User(answer)}}
	r, err := callContract(ctx, a.phase(a.Phases.Judge, graph.State{}, 1), req, func(verdict) []string { return nil }, false)
	use.requests += r.requests
	use.tokens += r.tokens
	if err != nil {
		level := slog.LevelWarn
		if errors.Is(err, context.Canceled) {
			level = slog.LevelDebug
		}
		a.log.Log(ctx, level, "planexec: the done_when check gave no verdict; keeping the step's result", slog.String("step", st.ID), slog.Any("error", err))
		return verdict{}, false
	}
	return r.value, true
}

// retryNote is what a step sent back to work carries to its next attempt:
// how many attempts missed, the last result, what it missed, and what the
// attempts used.
type retryNote struct {
	Attempts int    `json:"attempts"`
	Previous string `json:"previous,omitempty"`
	Missing  string `json:"missing,omitempty"`
	Requests int    `json:"requests,omitempty"`
	Tokens   int    `json:"tokens,omitempty"`
}

// retryKey holds, by step ID, the steps sent back to work.
var retryKey = graph.NewKey("planexec_retries", graph.MergeMap[string, retryNote]())
