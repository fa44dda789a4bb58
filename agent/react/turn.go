package react

import (
	"context"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Turn is a loop that has no tools asked for its one model turn without a
// graph run of its own: the request the model node would send (system
// prompt, the client's context note, the history cut by tool.ForModel),
// through the same middleware chain (the step budget's graceful finish
// included) and llm.Call, so usage, streaming and the model's hooks are
// as in the loop. It is for a caller that would otherwise invoke the loop
// as a nested run for one reply (agent/planexec's toolless steps) and can
// do without the nested run's checkpoints and events.
//
// The middleware see a zero graph.State in ModelCall.State, and writes they
// add (ModelCall.Writes) are not stored anywhere: a caller uses Turn only
// when its middleware read no state, write none and cannot interrupt.
type Turn struct{ a *agent }

// NewTurn checks cfg as New does and returns its single-turn form, or nil
// when the loop cannot be one model turn: it has tools (its own or a
// middleware's), a History policy (which reads and writes the loop's
// state), an Output (a second request), turn hooks, or FailOnStepLimit
// (a toolless loop's reply that calls tools anyway would fail it).
func NewTurn(cfg Config) (*Turn, error) {
	a, err := build(cfg, true)
	if err != nil {
		return nil, err
	}
	if len(a.specs) > 0 || cfg.History != nil || a.out != nil || a.chain.HasTurnHooks() || !a.graceful {
		return nil, nil
	}
	return &Turn{a: a}, nil
}

// leftKey carries, for a Turn, the steps the loop would have left after
// its first model step (what graph.RemainingSteps says in the loop): the
// step budget's graceful finish reads it instead of the caller's run.
type leftKey struct{}

// turnLeft is leftKey's value. It names the Turn's agent, so that a loop
// run by something the turn calls (a model that is itself an agent) reads
// its own run's steps, not the turn's.
type turnLeft struct {
	a    *agent
	left int
}

// remaining is graph.RemainingSteps, or the steps a's Turn has left.
func (a *agent) remaining(ctx context.Context) int {
	if v, ok := ctx.Value(leftKey{}).(turnLeft); ok && v.a == a {
		return v.left
	}
	return graph.RemainingSteps(ctx)
}

// Ask sends the loop's first request for history (the loop's input: it
// ends with the user's message) and returns the reply as the model node
// would append it, and the usage llm.Call recorded for it (on the running
// task, as the loop's would be). limit is the step limit the loop would
// run under. ok
// is false when the loop would not have ended with this reply — the reply
// calls tools and a tool round was left (the tools are unknown to a
// toolless loop, so it would answer with errors and ask again) — or when
// the run offers client tools (tool.ClientTools), which the loop would
// offer the model: then nothing was asked (msg is zero) or the reply is
// the caller's to account for, and the caller runs the loop instead.
func (t *Turn) Ask(ctx context.Context, history []llm.Message, limit int) (msg llm.Message, usage llm.Usage, ok bool, err error) {
	a := t.a
	if len(tool.ClientTools(ctx)) > 0 {
		return llm.Message{}, llm.Usage{}, false, nil
	}
	h := tool.ForModel(history, a.limit)
	call := &middleware.ModelCall{Request: a.request(ctx, h, a.specs), Model: a.model}
	// The loop's first step is step 1 of limit: limit-1 are left after it.
	ctx = context.WithValue(ctx, leftKey{}, turnLeft{a: a, left: limit - 1})
	resp, err := a.callModel(llm.WithVoice(ctx, a.voice), call)
	if err != nil {
		return llm.Message{}, llm.Usage{}, true, err
	}
	msg = resp.Message
	msg.Name = a.voice
	return msg, resp.Usage, len(msg.ToolCalls) == 0, nil
}
