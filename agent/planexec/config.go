package planexec

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/tool"
)

// Defaults for the Config fields left zero.
const (
	// DefaultMaxAsks is how many questions the planner may ask a person
	// before a plan is forced.
	DefaultMaxAsks = 3
	// DefaultRoundBudget is how many model requests one task may make (the
	// intent check, planning, every step's requests, replanning) before
	// the agent stops starting steps and delivers what it has.
	DefaultRoundBudget = 300
	// DefaultStepRounds is how many model requests (tool rounds) one step
	// may make before it must give its result.
	DefaultStepRounds = 100
	// DefaultCheckRetries is how many times a step that misses its
	// done_when check is sent back to work (Config.CheckSteps).
	DefaultCheckRetries = 1
)

// PlanFailure says what the agent does when the planner gives no usable
// plan after its corrections (Config.OnPlanFailure).
type PlanFailure string

// The plan failure policies.
const (
	// PlanFallbackSingleStep (the default, "") runs the task as a plan of
	// one step holding the user's request, so the run goes on.
	PlanFallbackSingleStep PlanFailure = ""
	// PlanFallbackAsk asks the person to describe the task further (an Ask
	// interrupt, text mode, Step "") and plans again with the answer; when
	// that plan fails too, it falls back to a single step.
	PlanFallbackAsk PlanFailure = "ask"
	// PlanFallbackFail fails the run with the contract error (matching
	// llm.ErrContract).
	PlanFallbackFail PlanFailure = "fail"
)

// Phases holds the model settings of each phase of the agent: which model
// answers and with which options (see llm.Settings). A zero field leaves
// the phase on Config.Model with the provider's defaults.
type Phases struct {
	// Intent is the chat-or-task check that routes each input.
	Intent llm.Settings
	// Ask is the planner while it may still ask the person questions (the
	// ask tool is offered); unset fields come from Plan.
	Ask llm.Settings
	// Plan is planning once no question may be asked, the deeper planning
	// of complex tasks (which turns reasoning on unless Plan.ReasoningEffort
	// is "off") and replanning.
	Plan llm.Settings
	// Execute is each step's ReAct loop, and a task run without a plan.
	Execute llm.Settings
	// Deliver writes the final answer.
	Deliver llm.Settings
	// Judge checks a step's result against its done_when
	// (Config.CheckSteps).
	Judge llm.Settings
}

func (p Phases) check() []error {
	var errs []error
	for name, s := range map[string]llm.Settings{"Intent": p.Intent, "Ask": p.Ask, "Plan": p.Plan, "Execute": p.Execute, "Deliver": p.Deliver, "Judge": p.Judge} {
		if err := s.Check("planexec: Config.Phases." + name); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Config configures the agent. Only Model is required; the modes are off
// unless set, so the zero Config (with a model) classifies each input and
// runs tasks as one ReAct loop.
type Config struct {
	// Name names the graph in errors and Mermaid output.
	Name string
	// Model answers every request: intent, planning, steps, replanning
	// and delivery. Wrap it with llm.Retry or llm.Fallback for resilience.
	Model llm.Model
	// System is added to the system prompt of every phase (a persona, house
	// rules, the date).
	System string
	// Tools are the tools every step (and a task run without a plan) may
	// call. Names must be unique across Tools, Packs and the built-in
	// tools (AskToolName, AddPackToolName, RemovePackToolName).
	Tools []tool.Tool
	// Packs are named groups of tools a step adds to its context and
	// removes from it while it runs, with the built-in tools_add and
	// tools_remove tools; only the tools of active packs are offered to
	// the model. ActivePacks are active when a step starts. A call of a
	// tool whose pack is not active fails with a message telling the model
	// to add the pack (a write tool is asked about first, as approval comes
	// before the call).
	Packs       map[string][]tool.Tool
	ActivePacks []string
	// Policy says which calls need a person's approval; tools it does not
	// name are approved by kind: read tools run at once, write tools wait
	// for approval through an interrupt (see tool.Policy).
	Policy tool.Policy

	// PlanMode plans a task before running it; off, a task runs as one
	// ReAct loop over the tools.
	PlanMode bool
	// AskMode lets the planner, and the steps, ask a person questions
	// (the ask_user tool: free text, a choice, or a form).
	AskMode bool
	// ConfirmPlan stops for a person to approve, edit or reject the plan
	// before any step runs. A nested agent (Nested, or run as a subgraph
	// or from a node, where graph.Namespace is not empty) never stops for
	// confirmation. Needs PlanMode.
	ConfirmPlan bool
	// Nested marks the agent as part of a larger one, so it skips plan
	// confirmation even when run at the top of its own graph.
	Nested bool
	// ContinueOnError decides what happens after a step fails (its
	// dependents are skipped either way, and the other steps of its level
	// finish): on, the independent steps go on and the agent delivers; off,
	// the run stops with a *StepError once the level is done.
	ContinueOnError bool
	// TaskOnly skips the intent check: every input is a task.
	TaskOnly bool
	// InlineSteps runs a step whose loop has no tools (no Tools, Packs or
	// AskMode, no Middleware and no History) as one model call in the
	// step's own task, instead of a ReAct loop invoked as a nested run:
	// the same request, budgets, usage and step events, but no
	// checkpoints in the step's namespace (its transcript is not kept;
	// the step's result is, in Steps), and the model is called from node
	// "step" in the agent's namespace, not from node "model" in the
	// step's (a model or an llmtest rule that chooses by node sees that).
	// A step still runs its loop when anyone would see the loop's run:
	// the run streams model tokens (graph.Messages) or the nested run's
	// events (graph.NestedEvents: a stream without
	// graph.WithoutSubgraphEvents, such as the server's with
	// stream_subgraphs), has an Observer, or offers client tools; when
	// its namespace may hold an earlier attempt's reply (a step resumed
	// after a crash, see graph.FreshNamespace); and when its model calls
	// a tool anyway. Nothing in such a step has a side effect.
	InlineSteps bool

	// MaxAsks bounds the planner's questions per task (0: DefaultMaxAsks);
	// after that it must give a plan.
	MaxAsks int
	// RoundBudget bounds the model requests of one task (0:
	// DefaultRoundBudget). Each step of a level gets an even share of what
	// is left (at least one request; its loop is told to finish when its
	// share runs out), so a wide level may pass the budget by a little.
	// Once it is used up no more steps start and the agent delivers what
	// it has. A task run without a plan is bounded by the run's step limit
	// instead, as an agent/react loop is.
	RoundBudget int
	// StepRounds bounds the model requests (tool rounds) of one step,
	// apart from the task's RoundBudget (0: DefaultStepRounds). A step
	// whose rounds run out is asked for its result with tools off; its
	// StepResult.Budget says so ("rounds").
	StepRounds int
	// TimeBudget, when positive, bounds the wall-clock time of the plan's
	// execution in each run (an Invoke or a resume: waiting for a person is
	// not the agent's time). Steps running when it passes are stopped
	// (failed, Budget "time"; this does not stop the run as other failures
	// do without ContinueOnError), no more steps start, and the agent
	// delivers what it has, saying that time ran out.
	TimeBudget time.Duration
	// TokenBudget, when positive, bounds the tokens (input and output) of
	// one task. Each step of a level gets an even share of what is left;
	// a step whose share runs out is asked for its result with tools off
	// (Budget "tokens"), and once the task's budget is used no more steps
	// start.
	TokenBudget int

	// OnPlanFailure says what happens when the planner gives no usable
	// plan after its corrections (default PlanFallbackSingleStep).
	OnPlanFailure PlanFailure
	// CheckSteps has a judge call (Phases.Judge) check each finished step
	// that has a done_when against its result. A step that misses it is
	// sent back to work with what is missing, up to CheckRetries times;
	// one that still misses keeps its result with StepResult.Check saying
	// what is missing (and, with ReplanOnMiss, the remaining plan is
	// revised).
	CheckSteps bool
	// CheckRetries bounds the retries of a step that misses its check (0:
	// DefaultCheckRetries).
	CheckRetries int
	// ReplanOnMiss revises the remaining plan after a step that still
	// misses its done_when once its retries are used.
	ReplanOnMiss bool
	// KeepApproved limits replanning, after a person approved (or
	// edited) the plan, to the steps they did not approve: the approved
	// steps that have not run stay exactly as approved, and the
	// replanner's other steps are added (without a review; their write
	// calls still ask). Off (the default), a revision that changes,
	// drops or adds steps of an approved plan goes back to the person as
	// a new plan review (PlanReview.Revised) before any of it runs.
	// Either way a plan a person approved is never silently replaced.
	KeepApproved bool

	// Phases sets the model and its options for each phase.
	Phases Phases
	// History is the message-history policy (package llm/history; nil:
	// the whole conversation) of every phase that reads the thread: the
	// intent check, planning, replanning and delivery see the part of
	// the conversation it selects, and each step's tool loop (and a task
	// run without a plan) applies it to its own rounds, so a step of 100
	// tool rounds stays within it too. The thread keeps every message.
	History history.Policy
	// Middleware wraps the model and tool calls of the tool loops (each
	// step's, and a task run without a plan), in the order given (see
	// package agent/middleware and react.Config.Middleware), and the model
	// calls of the planner phases (intent, plan, replan, judge, deliver),
	// inside the History middleware that applies Config.History to them
	// (its name, "history", is taken). Keys the middleware keep are in the
	// agent's state.
	Middleware []middleware.Middleware
	// MaxParallel bounds how many steps run at once (0: every ready step
	// of a level).
	MaxParallel int
	// MaxSteps, when positive, is the compiled graph's default step limit
	// (graph.WithStepLimit given to Invoke still wins).
	MaxSteps int

	// Prompts replaces the default instructions of each phase; each is a
	// text/template over PromptData (see Prompts).
	Prompts Prompts
	// Logger receives replies that could not be used and fallbacks (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// check reports every problem of cfg that New can see before building the
// loops (which report their own).
func (cfg Config) check() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("planexec: "+format, args...)) }
	if cfg.Model == nil {
		add("Config.Model is nil; give the agent an llm.Model")
	}
	if err := history.Validate(cfg.History); err != nil {
		add("Config.History: %v", err)
	}
	if cfg.ConfirmPlan && !cfg.PlanMode {
		add("Config.ConfirmPlan is set but PlanMode is not; there is no plan to confirm without planning (set PlanMode too)")
	}
	for name, v := range map[string]int{"MaxAsks": cfg.MaxAsks, "RoundBudget": cfg.RoundBudget, "MaxParallel": cfg.MaxParallel, "MaxSteps": cfg.MaxSteps,
		"StepRounds": cfg.StepRounds, "TokenBudget": cfg.TokenBudget, "CheckRetries": cfg.CheckRetries} {
		if v < 0 {
			add("Config.%s is %d; use a positive number, or 0 for the default", name, v)
		}
	}
	if cfg.TimeBudget < 0 {
		add("Config.TimeBudget is %v; use a positive duration, or 0 for none", cfg.TimeBudget)
	}
	switch cfg.OnPlanFailure {
	case PlanFallbackSingleStep, PlanFallbackAsk, PlanFallbackFail:
	default:
		add("Config.OnPlanFailure is %q; use %q, %q or leave it empty (a single-step plan)", cfg.OnPlanFailure, PlanFallbackAsk, PlanFallbackFail)
	}
	errs = append(errs, cfg.Phases.check()...)
	if _, err := cfg.Prompts.parse(); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]string{AskToolName: "the built-in ask tool"}
	if len(cfg.Packs) > 0 {
		seen[AddPackToolName] = "the built-in pack tool"
		seen[RemovePackToolName] = "the built-in pack tool"
	}
	claim := func(t tool.Tool, where string) {
		if t == nil {
			add("%s holds a nil tool", where)
			return
		}
		name := t.Info().Name
		if other, dup := seen[name]; dup {
			add("%s has a tool named %q, and so does %s; tool names must be unique", where, name, other)
			return
		}
		seen[name] = where
	}
	for _, t := range cfg.Tools {
		claim(t, "Config.Tools")
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Packs)) {
		if strings.TrimSpace(name) == "" {
			add("Config.Packs has a pack with an empty name")
		}
		if len(cfg.Packs[name]) == 0 {
			add("pack %q has no tools", name)
		}
		for _, t := range cfg.Packs[name] {
			claim(t, fmt.Sprintf("pack %q", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Policy)) {
		if _, ok := seen[name]; !ok {
			add("Config.Policy has a rule for %q, which is not one of the agent's tools", name)
		}
	}
	for _, name := range cfg.ActivePacks {
		if _, ok := cfg.Packs[name]; !ok {
			add("Config.ActivePacks names %q, which is not in Config.Packs (%s)", name, packNames(cfg.Packs))
		}
	}
	return errs
}

func packNames(packs map[string][]tool.Tool) string {
	if len(packs) == 0 {
		return "there are none"
	}
	names := slices.Sorted(maps.Keys(packs))
	for i, n := range names {
		names[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(names, ", ")
}

// settings is a checked Config with its defaults filled in.
type settings struct {
	Config
	prompts *templates
	log     *slog.Logger
}

// compileOptions are the compiled graph's default run options.
func (cfg Config) compileOptions() []graph.RunOption {
	if cfg.MaxSteps > 0 {
		return []graph.RunOption{graph.WithStepLimit(cfg.MaxSteps)}
	}
	return nil
}
