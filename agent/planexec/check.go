package planexec

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"text/template"

	"github.com/trellis-agents/trellis/llm"
)

// verdict is the judge's contract: is the step done, and what is missing.
type verdict struct {
	Done    bool   `json:"done"`
	Missing string `json:"missing,omitempty" jsonschema:"what is still to do when not done"`
}

// judgeShape shows the judge the JSON it must send.
const judgeShape = `{"done": false, "missing": "..."}`

// retryMarker starts the message that sends a step back to work after its
// result missed its done_when.
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
	r, err := callContract(ctx, a.model(a.Phases.Judge), req, func(verdict) []string { return nil }, false)
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

// retries counts the times a step's loop was sent back to work.
func retries(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Text(), retryMarker) {
			n++
		}
	}
	return n
}
