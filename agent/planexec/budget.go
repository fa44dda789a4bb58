package planexec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// The budgets that can end a step or stop a task (StepResult.Budget,
// Stopped).
const (
	// BudgetRounds: the step's rounds (Config.StepRounds, or its share of
	// the task's RoundBudget) or the task's RoundBudget ran out.
	BudgetRounds = "rounds"
	// BudgetTokens: the step's share of TokenBudget, or the task's, ran
	// out.
	BudgetTokens = "tokens"
	// BudgetTime: the run's TimeBudget passed.
	BudgetTime = "time"
)

// stepRoundsPrompt is the step loop's react.Config.BudgetPrompt: the last
// request a step may make carries it, which is how the agent tells that
// the rounds budget ended the step.
const stepRoundsPrompt = "The round budget of this step is used up: no more tools can be called. " +
	"Give the step's result now from what you have found so far, and say plainly what is still unknown or unfinished."

// stepTokensPrompt replaces the request's tools when a step's token share
// is used up.
const stepTokensPrompt = "The token budget of this step is used up: no more tools can be called. " +
	"Give the step's result now from what you have found so far, and say plainly what is still unknown or unfinished."

// ErrBudget is matched (errors.Is) by the error of a step stopped by a
// budget: the time budget passed, or its model kept calling tools after
// its token share ran out.
var ErrBudget = errors.New("planexec: budget used up")

// meter follows one step's use of its budgets. Its loop's model requests
// go through the budget middleware, which reads the meter from the
// context.
type meter struct {
	step     string // the step's ID (stepFrom)
	mu       sync.Mutex
	tokens   int64 // the step's token share, 0 for none
	deadline time.Time
	spent    int64
	forced   int    // requests made after the token share ran out
	hit      string // the budget that ended the step
}

type meterKey struct{}

func (m *meter) record(u llm.Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spent += u.InputTokens + u.OutputTokens
}

func (m *meter) mark(budget string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hit == "" {
		m.hit = budget
	}
}

func (m *meter) budget() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hit
}

// prepare checks the budgets before a request and returns the request
// and tail to send: req and tail themselves, or with tools off and the
// tail asking for the result. The step's last round is told by react's
// budget prompt at the end of tail (or of req's messages).
func (m *meter) prepare(req *llm.Request, tail []llm.Message) (*llm.Request, []llm.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.deadline.IsZero() && !time.Now().Before(m.deadline) {
		if m.hit == "" {
			m.hit = BudgetTime
		}
		return nil, nil, fmt.Errorf("the time budget passed before the step's next model request: %w", ErrBudget)
	}
	last := tail
	if len(last) == 0 && req != nil {
		last = req.Messages
	}
	if req != nil && req.ToolChoice.Mode == llm.ToolChoiceNone && len(last) > 0 &&
		last[len(last)-1].Text() == stepRoundsPrompt && m.hit == "" {
		m.hit = BudgetRounds
	}
	if m.tokens <= 0 || m.spent < m.tokens || req == nil {
		return req, tail, nil
	}
	if m.hit == "" {
		m.hit = BudgetTokens
	}
	m.forced++
	if m.forced > 2 {
		return nil, nil, fmt.Errorf("the step's token share (%d) is used up and its model kept calling tools: %w", m.tokens, ErrBudget)
	}
	c := *req
	c.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
	return &c, append(slices.Clip(tail), llm.User(stepTokensPrompt)), nil
}

// budget is the step's budgets as middleware of the step loop's chain,
// innermost: it reads the step's meter from the context, checks it
// before each request (ending the step, or asking for the result with
// tools off) and adds the reply's usage to it.
type budget struct{}

func (budget) Name() string { return "planexec_budget" }

func (budget) WrapModel(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	m, _ := ctx.Value(meterKey{}).(*meter)
	if m == nil {
		return next(ctx, call)
	}
	req, tail, err := m.prepare(call.Request, call.Tail)
	if err != nil {
		return nil, err
	}
	call.Request, call.Tail = req, tail
	resp, err := next(ctx, call)
	if resp != nil {
		m.record(resp.Usage)
	}
	return resp, err
}

// tokensOf counts a usage's tokens.
func tokensOf(u llm.Usage) int { return int(u.InputTokens + u.OutputTokens) }

// clock is the time budget's deadline in force and the run that set it:
// each run (a resume included) has the whole TimeBudget, as waiting for a
// person is not the agent's time.
type clock struct {
	Run      int       `json:"run,omitempty"`
	Deadline time.Time `json:"deadline,omitzero"`
}

// clockKey's reducer keeps the earliest deadline of a run: the steps a
// resumed run continues and its dispatcher may each set it in one step.
var clockKey = graph.NewKey("planexec_clock", graph.Reduce("earliest-deadline", func(cur, upd clock) (clock, error) {
	if upd.Run != cur.Run || cur.Deadline.IsZero() || upd.Deadline.Before(cur.Deadline) {
		return upd, nil
	}
	return cur, nil
}))

// runMark identifies the running run within a thread (see agent/router):
// graph.Step counts the thread's steps and graph.RemainingSteps this run's,
// so their sum is the same in every step of one run.
func runMark(ctx context.Context) int {
	return graph.Step(ctx) + graph.RemainingSteps(ctx)
}

// deadline returns the time budget's deadline for this run, and whether
// it is new (the caller should store it). Zero without a TimeBudget.
func (a *agent) deadline(ctx context.Context, s graph.State) (time.Time, bool) {
	if a.TimeBudget <= 0 {
		return time.Time{}, false
	}
	c := clockKey.Get(s)
	if c.Run == runMark(ctx) && !c.Deadline.IsZero() {
		return c.Deadline, false
	}
	return time.Now().Add(a.TimeBudget), true
}
