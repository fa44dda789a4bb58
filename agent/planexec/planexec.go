// Package planexec builds a plan-and-execute agent as a compiled
// graph.Graph: it plans a task, asks a person what it must, has the plan
// confirmed, runs the plan's steps as a dependency graph (the independent
// steps of a level in parallel, each a ReAct loop), revises the plan while
// it runs, and delivers a summary.
//
//	g, err := planexec.New(planexec.Config{
//		Model: model, Tools: tools,
//		PlanMode: true, AskMode: true, ConfirmPlan: true,
//	})
//	res, err := g.Invoke(ctx, planexec.Input("Compare the three offers"), graph.WithCheckpointer(saver), graph.WithThread(id))
//	// res.Interrupts[0] is a question (AskFrom) or the plan (ReviewFrom);
//	// answer it and invoke again with graph.WithResume.
//	answer, _ := planexec.Answer(res.State)
//
// A run goes through these phases, each a node of the graph:
//
//   - intent: the input is chat (answered at once) or a task (when unsure,
//     a task). TaskOnly skips the check.
//   - plan: a quick assessment writes the plan contract (Plan: task, steps
//     with dependencies and done_when, replan) and rates the task; a
//     complex task gets a second, deeper planning call with reasoning on.
//     With AskMode the planner may call the ask_user tool instead: the run
//     stops with an interrupt carrying an Ask (text, select or form) and
//     resumes with an AskAnswer; a form answer that does not fit its fields
//     is asked again with the problems (a new interrupt). After MaxAsks
//     questions the planner must give a plan. Replies that are not a valid
//     plan (bad JSON, unknown dependencies, a cycle) are sent back to the
//     model with the problems, up to three replies.
//   - review (ConfirmPlan, top level only): an interrupt carrying a
//     PlanReview; a ReviewDecision approves the plan, replaces it with an
//     edited one (an invalid edit is asked again with the problems), or
//     rejects it with feedback, and the planner plans again.
//   - dispatch and step: the steps run level by level. Each ready step is
//     its own graph task (graph.Send), so parallel steps run at once, each
//     with its own interrupt IDs, and a step that finished is never run
//     again when the thread resumes. A step is a ReAct loop (agent/react)
//     invoked from the step's task, whose prompt holds the results of the
//     steps it depends on; read tools run at once, write tools wait for
//     approval, and the step may ask a person too. Those interrupts stop
//     the whole run and resume into the same step, in any process that
//     shares the checkpointer. A failed step's dependents are skipped; see
//     ContinueOnError.
//   - replan: at the end of a level holding a step named in replan, the
//     planner revises the remaining steps; finished steps keep their
//     results and never run again.
//   - deliver: the model writes the final answer from the step results;
//     when it fails, a mechanical summary lists the steps and their status.
//
// # Budgets
//
// RoundBudget bounds the model requests of a task (usage Requests, step
// loops included) and StepRounds those of one step (default 100, apart
// from the task's total); TokenBudget bounds a task's tokens and
// TimeBudget the wall-clock time of a run's execution (waiting for a
// person excluded). A step whose rounds or token share run out gives its
// result with tools off; one still running when the time passes fails.
// Either way StepResult.Budget names the budget; once a task's budget is
// used up no more steps start (Stopped names it), and the delivery is
// told which budget ran out and what was left undone, to say so plainly.
//
// # Degrading instead of failing
//
// When the planner gives no usable plan after its corrections, the task
// runs as a single step holding the request (OnPlanFailure, the default),
// or the person is asked once to describe the task (PlanFallbackAsk), or
// the run fails (PlanFallbackFail). When the model cannot write the final
// answer, a mechanical summary is delivered.
//
// # Checking steps
//
// With CheckSteps, a judge call checks each finished step that has a
// done_when against its result. A step that misses it runs again as a
// fresh task, told its earlier result and what it missed, up to
// CheckRetries times; one that still misses keeps its result with
// StepResult.Check saying what is missing, and with ReplanOnMiss the
// remaining plan is revised to finish it.
//
// # Phases and prompts
//
// Each phase (intent, ask, plan, execute, deliver, judge) can have its
// own model and options (Config.Phases, llm.Settings). The prompts are
// text/templates over PromptData (Config.Prompts), checked by New.
// Options decodes all of these from a configuration file (trellis.yaml).
//
// Tool packs (Config.Packs) are named groups of tools a step adds to its
// context, and removes, with the built-in tools_add and tools_remove: the
// model is offered only the tools of active packs. Which packs are active
// is read from the step's own history (its successful pack calls), not
// kept in state, so it needs nothing saved and survives resumes.
//
// Progress is streamed as custom events (Event, read with EventFrom): plan
// ready, step started, tool call and result, waiting for a person, step
// finished, failed or skipped, replanned, delivered.
package planexec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"text/template"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// The state keys. Messages, Calls and ToolSubset are agent/react's, so the
// agent shares its conversation with a parent graph that lists them; the
// others are the agent's own.
var (
	// Messages is the conversation: the user's inputs and the agent's
	// answers (with the tool calls of tasks run without a plan).
	Messages = react.Messages
	// Calls and ToolSubset are the ReAct loop's keys for tasks run
	// without a plan (see agent/react).
	Calls      = react.Calls
	ToolSubset = react.ToolSubset
	// PlanMessages is the planning dialogue of the current task: the
	// questions asked and their answers, the plans given, feedback.
	PlanMessages = llm.NewMessagesKey("planexec_plan_messages")
	// CurrentPlan is the current task's plan.
	CurrentPlan = graph.NewKey[Plan]("planexec_plan")
	// Steps holds the result of every finished step, by step ID.
	Steps = graph.NewKey("planexec_steps", graph.MergeMap[string, StepResult]())
	// Rounds counts the current task's model requests.
	Rounds = graph.NewKey("planexec_rounds", graph.Sum[int]())
	// Summary is the delivered answer of the current task.
	Summary = graph.NewKey[string]("planexec_summary")
	// Tokens counts the current task's tokens (input and output).
	Tokens = graph.NewKey("planexec_tokens", graph.Sum[int]())
	// Stopped names the budget that stopped the current task's plan
	// before every step ran (BudgetRounds, BudgetTokens, BudgetTime), or
	// is "".
	Stopped = graph.NewKey[string]("planexec_stopped")
)

// StateKeys returns every key the agent reads and writes; a parent graph
// that adds the agent as a subgraph may list any of them to share them.
func StateKeys() []graph.AnyKey {
	return []graph.AnyKey{Messages, Calls, ToolSubset, PlanMessages, CurrentPlan, Steps, Rounds, Summary, Tokens, Stopped, clockKey, retryKey, approvedKey, feedbackKey, ConversationSummary, react.HistorySummary}
}

// StepStatus is how a step ended.
type StepStatus string

// The step statuses. A step without a result has not run.
const (
	StepDone    StepStatus = "done"
	StepFailed  StepStatus = "failed"
	StepSkipped StepStatus = "skipped"
)

// StepResult is what a finished step left.
type StepResult struct {
	Status StepStatus `json:"status"`
	// Result is the step's answer (StepDone).
	Result string `json:"result,omitempty"`
	// Error says why the step failed or was skipped.
	Error string `json:"error,omitempty"`
	// Requests counts the step's model requests (its judge's included).
	Requests int `json:"requests,omitempty"`
	// Tokens counts the step's tokens (input and output).
	Tokens int `json:"tokens,omitempty"`
	// Budget names the budget that ended the step (BudgetRounds,
	// BudgetTokens, BudgetTime), or is "". A step ended by its rounds or
	// tokens gave a result with tools off (StepDone); one ended by time
	// failed.
	Budget string `json:"budget,omitempty"`
	// Check says what the step's result still misses of its done_when
	// after its retries (Config.CheckSteps), or is "".
	Check string `json:"check,omitempty"`
	// Retries counts the times the step was sent back to work because
	// its result missed its done_when (each a fresh loop, told its
	// earlier result and what it missed).
	Retries int `json:"retries,omitempty"`
	// Replanned is set once a missed check has led to replanning
	// (Config.ReplanOnMiss), so it does so once.
	Replanned bool `json:"replanned,omitempty"`
	// Undone are the step's tool calls that did not happen: rejected by
	// a person (with their reason) or failed, and not made up for by a
	// later successful call of the same tool. A StepDone step with Undone
	// calls finished its loop without doing all it tried to; every report
	// of it (the delivery's input, MechanicalSummary, EventStepFinished's
	// Error) says so.
	Undone []CallOutcome `json:"undone,omitempty"`
}

// StepError is the error of a run stopped by failed steps (without
// ContinueOnError).
type StepError struct {
	// Failed maps each failed step's ID to its error.
	Failed map[string]string
}

func (e *StepError) Error() string {
	parts := make([]string, 0, len(e.Failed))
	for _, id := range slices.Sorted(maps.Keys(e.Failed)) {
		parts = append(parts, fmt.Sprintf("%s: %s", id, e.Failed[id]))
	}
	return "planexec: steps failed, so the run stopped (set Config.ContinueOnError to deliver what the other steps found): " + strings.Join(parts, "; ")
}

// The node names. Inside a step, the loop's nodes are react.ModelNode and
// react.ToolsNode, in namespace "step:<task ID>".
const (
	IntentNode   = "intent"
	PlanNode     = "plan"
	AskNode      = "ask"
	ReviewNode   = "review"
	DispatchNode = "dispatch"
	StepNode     = "step"
	ReplanNode   = "replan"
	DeliverNode  = "deliver"
	// HelpNode asks the person to describe the task when planning failed
	// (OnPlanFailure PlanFallbackAsk).
	HelpNode = "help"
	// DirectPrefix prefixes the ReAct loop's nodes of a task run without
	// a plan; FinishNode delivers its answer.
	DirectPrefix = "direct_"
	FinishNode   = "finish"
)

// Input returns a run input that appends a user message with text to
// Messages.
func Input(text string) graph.Update {
	return graph.Writes(graph.Append(Messages, llm.User(text)))
}

// Answer returns the answer the agent delivered for the current task (the
// chat reply, the summary of the plan's run, or the direct loop's answer),
// and false when none was delivered yet (the run is waiting, or failed).
func Answer(s graph.State) (string, bool) {
	v, ok := Summary.Lookup(s)
	return v, ok && v != ""
}

// agent is a checked Config with the loops built.
type agent struct {
	*settings
	packs   *packSet
	ask     *askTool
	steps   *graph.Graph // one step's ReAct loop
	tools   []tool.Tool  // the step tools, wrapped
	catalog string       // the step tools described for the planner
	// turn is the step loop as one model call (Config.InlineSteps), or
	// nil when steps run their loops (see stepInline).
	turn *react.Turn
	// valid is the last plan dispatch found valid (see validated).
	valid validated
	// limits are the step loop's run options for the step limits steps
	// most often get (see loopOptions), made once instead of per step.
	limits [smallRounds + 1][]graph.RunOption
	full   []graph.RunOption // for a share of StepRounds rounds
	// callModel passes the phases' model calls through the caller's
	// model hooks.
	callModel middleware.ModelHandler
}

// New returns the agent as a compiled graph. Run it with Invoke or Stream
// (input: Input); questions, plan reviews and tool approvals need a
// checkpointer and a thread (graph.WithCheckpointer, graph.WithThread).
//
// Every problem in cfg is reported at once, in one error.
func New(cfg Config) (*graph.Graph, error) {
	if err := errors.Join(cfg.check()...); err != nil {
		return nil, err
	}
	prompts, err := cfg.Prompts.parse()
	if err != nil {
		return nil, err
	}
	s := &settings{Config: cfg, prompts: prompts, log: cfg.Logger}
	s.fill()
	a := &agent{settings: s, packs: newPackSet(cfg.Packs, cfg.ActivePacks), ask: newAskTool()}
	own, err := a.historyMiddleware()
	if err != nil {
		return nil, fmt.Errorf("planexec: Config.History: %w", err)
	}
	chain, err := middleware.NewChain(append(own, cfg.Middleware...)...)
	if err != nil {
		return nil, fmt.Errorf("planexec: Config.Middleware: %w", err)
	}
	a.callModel = chain.WrapModel(nil)
	a.tools = a.stepTools()
	a.catalog = describe(a.tools)
	a.makeLoopOptions()
	keys := StateKeys()
	for _, m := range cfg.Middleware {
		if st, ok := m.(middleware.Stateful); ok {
			keys = append(keys, st.StateKeys()...)
		}
	}
	b := graph.New(keys...)
	b.SetName(cmpOr(cfg.Name, "planexec"))
	if err := a.wire(b); err != nil {
		return nil, err
	}
	g, err := b.Compile(cfg.compileOptions()...)
	if err != nil {
		return nil, fmt.Errorf("planexec: the agent's graph does not compile: %w", err)
	}
	return g, nil
}

func (s *settings) fill() {
	if s.MaxAsks == 0 {
		s.MaxAsks = DefaultMaxAsks
	}
	if s.RoundBudget == 0 {
		s.RoundBudget = DefaultRoundBudget
	}
	if s.StepRounds == 0 {
		s.StepRounds = DefaultStepRounds
	}
	if s.CheckRetries == 0 {
		s.CheckRetries = DefaultCheckRetries
	}
	if s.log == nil {
		s.log = slog.Default()
	}
}

// stepTools returns the tools of a step's loop: Config.Tools and the
// packs' tools, wrapped for events and pack guards, then the built-ins.
func (a *agent) stepTools() []tool.Tool {
	var out []tool.Tool
	for _, t := range a.Tools {
		out = append(out, watch(t, "", a.packs))
	}
	for _, name := range slices.Sorted(maps.Keys(a.Packs)) {
		for _, t := range a.Packs[name] {
			out = append(out, watch(t, name, a.packs))
		}
	}
	if a.AskMode {
		out = append(out, a.ask)
	}
	if !a.packs.empty() {
		out = append(out, newPackTool(true, a.packs), newPackTool(false, a.packs))
	}
	return out
}

// loopConfig is the ReAct configuration of a step (and of a task run
// without a plan): the Execute phase's model, narrowed to the active packs
// and metered by the step's budgets.
func (a *agent) loopConfig(prompt, name string, step bool) react.Config {
	// The step's budgets and the tool packs are the loop's own
	// middleware, innermost: the caller's middleware sees the request
	// before they narrow it or turn tools off.
	mws := append(slices.Clip(a.Middleware), budget{})
	if !a.packs.empty() {
		mws = append(mws, packs{a.packs})
	}
	c := react.Config{
		Name:       name,
		Model:      llm.WithSettings(a.Model, a.Phases.Execute),
		System:     a.system(prompt),
		Tools:      a.tools,
		Policy:     a.Policy,
		Logger:     a.Logger,
		History:    a.History,
		Middleware: mws,
		// The step's Undone calls are reported by the step itself.
		LeaveUndoneUnsaid: true,
	}
	if step {
		c.BudgetPrompt = stepRoundsPrompt // how the meter tells the rounds ran out
	}
	return c
}

// model returns the model of a phase.
func (a *agent) model(s llm.Settings) llm.Model { return llm.WithSettings(a.Model, s) }

// modelCall asks a phase's model (named model) one request.
type modelCall struct {
	model string
	ask   func(ctx context.Context, req *llm.Request) (*llm.Response, error)
}

// phase returns how a planner phase (intent, plan, replan, judge,
// deliver) asks its model: through the phase chain (the History
// middleware for Config.History, then the model hooks of
// Config.Middleware, as the step loops do), with the phase's settings.
// s is the node's state (the zero State for the judge, which has none).
// The first head messages of a request are its system prompt and the
// conversation, the history the policy selects from; the rest are the
// call's Tail. Writes the hooks add are written with the node's output
// when the node is wrapped by keep (the judge's are dropped).
func (a *agent) phase(settings llm.Settings, s graph.State, head int) modelCall {
	m := a.model(settings)
	return modelCall{model: m.Name(), ask: func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		box, _ := ctx.Value(phaseWritesKey{}).(*phaseWrites)
		r := *req
		n := min(max(head, 0), len(req.Messages))
		r.Messages = req.Messages[:n:n]
		call := &middleware.ModelCall{Request: &r, Model: m, State: s, Tail: req.Messages[n:]}
		if box != nil {
			call.Pending = box.ws
		}
		resp, err := a.callModel(ctx, call)
		if err == nil && box != nil {
			box.add(call.Writes())
		}
		return resp, err
	}}
}

// data is the prompt data every phase shares.
func (a *agent) data() PromptData {
	return PromptData{Name: a.Name, Tools: a.catalog, AskTool: AskToolName, MaxAsks: a.MaxAsks}
}

// system joins a phase's instructions with Config.System.
func (a *agent) system(prompt string) string {
	if strings.TrimSpace(a.System) == "" {
		return prompt
	}
	return prompt + "\n\n" + a.System
}

// wire adds the nodes and edges the configuration needs.
func (a *agent) wire(b *graph.Builder) error {
	next := PlanNode
	if !a.PlanMode {
		next = DirectPrefix + react.ModelNode
	}
	b.AddNode(IntentNode, a.keep(a.intentNode(next)), graph.Destinations(graph.END, next))
	b.SetEntry(IntentNode)
	if !a.PlanMode {
		prompt := a.render(context.Background(), func(t *templates) *template.Template { return t.Direct }, a.data())
		entry, err := react.AddTo(b, DirectPrefix, FinishNode, a.loopConfig(prompt, "", false))
		if err != nil {
			return err
		}
		if entry != next {
			return fmt.Errorf("planexec: the direct loop's entry is %q, not %q", entry, next)
		}
		b.AddNode(FinishNode, a.finishNode)
		b.AddEdge(FinishNode, graph.END)
		return nil
	}
	prompt := a.render(context.Background(), func(t *templates) *template.Template { return t.Step }, a.data())
	steps, err := react.New(a.loopConfig(prompt, "planexec step", true))
	if err != nil {
		return err
	}
	a.steps = steps
	if a.InlineSteps && len(a.tools) == 0 && len(a.Middleware) == 0 && a.History == nil {
		// Only the agent's own budget middleware is in the chain: it
		// reads the step's meter, writes no state and cannot interrupt.
		if a.turn, err = react.NewTurn(a.loopConfig(prompt, "planexec step", true)); err != nil {
			return err
		}
	}
	planDests := []string{DispatchNode}
	if a.AskMode {
		planDests = append(planDests, AskNode)
		b.AddNode(AskNode, a.askNode)
		b.AddEdge(AskNode, PlanNode)
	}
	if a.OnPlanFailure == PlanFallbackAsk {
		planDests = append(planDests, HelpNode)
		b.AddNode(HelpNode, a.helpNode)
		b.AddEdge(HelpNode, PlanNode)
	}
	if a.ConfirmPlan {
		planDests = append(planDests, ReviewNode)
		b.AddNode(ReviewNode, a.reviewNode, graph.Destinations(PlanNode, DispatchNode, ReplanNode))
	}
	b.AddNode(PlanNode, a.keep(a.planNode), graph.Destinations(planDests...))
	b.AddNode(DispatchNode, a.dispatchNode, graph.Destinations(StepNode, ReplanNode, DeliverNode))
	graph.AddSendNode(b, StepNode, a.stepNode)
	b.AddEdge(StepNode, DispatchNode)
	replanDests := []string{DispatchNode}
	if a.ConfirmPlan {
		replanDests = append(replanDests, ReviewNode)
	}
	b.AddNode(ReplanNode, a.keep(a.replanNode), graph.Destinations(replanDests...))
	b.AddNode(DeliverNode, a.keep(a.deliverNode))
	b.AddEdge(DeliverNode, graph.END)
	return nil
}

// nested reports whether the agent runs inside a larger graph, where it
// does not stop for plan confirmation.
func (a *agent) nested(ctx context.Context) bool {
	return a.Nested || graph.Namespace(ctx) != ""
}

// describe lists tools for the planner, one line each.
func describe(tools []tool.Tool) string {
	var b strings.Builder
	for _, t := range tools {
		in := t.Info()
		desc, _, _ := strings.Cut(in.Description, "\n")
		fmt.Fprintf(&b, "- %s: %s\n", in.Name, desc)
	}
	return b.String()
}
