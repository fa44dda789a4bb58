package builder

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Agent is a built agent. It is immutable and safe for concurrent runs.
type Agent struct {
	name, description string
	nodes             map[string]bool // the LLM nodes
	infos             []NodeInfo
	g                 *graph.Graph
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.name }

// Description returns what the agent does, as set by Builder.Description.
func (a *Agent) Description() string { return a.description }

// Graph returns the compiled graph: stream it (Graph().Stream), draw it
// (Graph().Mermaid), or add it to a larger graph (AddSubgraph), which
// shares react.Messages and react.Calls with it when it lists them. Its
// default run options are the agent's step limit (two steps per
// iteration) and timeout; options given to a run win.
func (a *Agent) Graph() *graph.Graph { return a.g }

// Input returns a run input that adds a user message with text to the
// conversation (it is react.Input).
func Input(text string) graph.Update { return append(react.Input(text), entryKey.Set("")) }

// Run runs the agent to its end and returns the result; see Start. The
// error is Result.Err.
func (a *Agent) Run(ctx context.Context, input graph.Update, opts ...graph.RunOption) (*Result, error) {
	r := a.prepare(ctx, input, opts)
	r.execute()
	return r.res, r.res.Err
}

// Start starts a run of the agent in a goroutine and returns its handle at
// once. input is applied as the run's first step (Input(text) adds a user
// message); with a checkpointer and a thread (graph.WithCheckpointer,
// graph.WithThread) the run continues the thread, and a nil input with
// graph.WithResume answers an interrupt, such as a write tool's approval
// (see tool.ApprovalFrom and Result.Graph.Interrupts).
//
// opts are the graph's run options; the handle attaches its own
// graph.Control, so do not pass graph.WithControl.
func (a *Agent) Start(ctx context.Context, input graph.Update, opts ...graph.RunOption) *Run {
	r := a.prepare(ctx, input, opts)
	go r.execute()
	return r
}

func (a *Agent) prepare(ctx context.Context, input graph.Update, opts []graph.RunOption) *Run {
	r := &Run{agent: a, ctl: graph.NewControl(), input: input, done: make(chan struct{}), id: newRunID(), started: time.Now()}
	r.ctx = context.WithValue(ctx, observerKey{a}, r)
	r.opts = append(slices.Clip(opts), graph.WithControl(r.ctl), graph.WithRunID(r.id))
	return r
}

// observerKey keys the Run in the context of its graph run, so the
// agent's route nodes can report to it.
type observerKey struct{ a *Agent }

// observe reports the tool calls in s to the Run whose graph run ctx
// belongs to, if any. Route nodes call it after every visit.
func (a *Agent) observe(ctx context.Context, s graph.State) {
	if r, ok := ctx.Value(observerKey{a}).(*Run); ok {
		calls := ToolCalls(s)
		r.calls.Store(&calls)
	}
}

// Run is a running agent: it reports the run's status, iterations and tool
// calls while it goes, and pauses, resumes or aborts it. Its methods are
// safe from any goroutine.
type Run struct {
	agent *Agent
	ctl   *graph.Control
	ctx   context.Context
	input graph.Update
	opts  []graph.RunOption
	calls atomic.Pointer[[]tool.Record]
	done  chan struct{}

	id      string
	started time.Time
	mu      sync.Mutex
	inbox   []string // AddMessage's messages not yet in the conversation
	ended   bool
	res     *Result // set before done is closed
}

func (r *Run) execute() {
	defer close(r.done)
	defer r.end()
	gres, err := r.agent.g.Invoke(r.ctx, r.input, r.opts...)
	r.res = r.agent.result(gres, err)
}

// finished returns the result once the run has ended, else nil.
func (r *Run) finished() *Result {
	select {
	case <-r.done:
		return r.res
	default:
		return nil
	}
}

// Status reports where the run stands: pending, running, paused, then
// completed, interrupted, cancelled (aborted or timed out) or failed.
func (r *Run) Status() graph.Status {
	if res := r.finished(); res != nil {
		return res.Status
	}
	return r.ctl.Status()
}

// Iterations reports how many LLM node visits the run has finished. While
// it runs the count comes from its committed steps (a visit and its route
// take one each); once it has ended it is Result.Iterations.
func (r *Run) Iterations() int {
	if res := r.finished(); res != nil {
		return res.Iterations
	}
	return (r.ctl.Steps() + 1) / 2
}

// ToolCalls returns the records of the tool calls in the conversation, in
// the order the model asked for them (see ToolCalls). While the run goes
// they are those known after the last finished visit (none before the
// first); once it has ended they are those of the final state.
func (r *Run) ToolCalls() []tool.Record {
	if res := r.finished(); res != nil {
		if res.Graph == nil {
			return nil
		}
		return ToolCalls(res.FinalState)
	}
	if p := r.calls.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// Pause asks the run to stop after the step in progress: after the LLM
// node visit or route in progress finishes and is committed. A visit is
// not paused midway.
func (r *Run) Pause() { r.ctl.Pause() }

// Resume lets a paused run go on.
func (r *Run) Resume() { r.ctl.Resume() }

// Abort stops the run at once: the step in progress is discarded (the last
// checkpoint stays) and the run ends cancelled, its error matching
// graph.ErrAborted.
func (r *Run) Abort() { r.ctl.Abort() }

// Done is closed when the run has ended.
func (r *Run) Done() <-chan struct{} { return r.done }

// Wait waits for the run to end and returns its result. The error is
// Result.Err.
func (r *Run) Wait() (*Result, error) {
	<-r.done
	return r.res, r.res.Err
}

// Result is what a run of the agent ended with.
type Result struct {
	// FinalState is the state when the run ended (the zero State when the
	// run could not start; see Graph).
	FinalState graph.State
	// Path lists the LLM nodes this run visited, in order.
	Path []string
	// Success reports that the run completed and ended by its own routing:
	// false when it failed, was cancelled, timed out, is waiting at an
	// interrupt, or ran out of iterations (LimitReached).
	Success bool
	// FinalMessage is the last answer in the conversation: the text of the
	// last message when it is an assistant's reply without tool calls (see
	// react.AnswerFrom), else "".
	FinalMessage string
	// Iterations counts the LLM node visits this run finished: len(Path).
	Iterations int
	// Status is how the run ended.
	Status graph.Status
	// LimitReached reports that the run completed because no iteration
	// was left for the next node; FinalMessage holds the last node's
	// answer.
	LimitReached bool
	// Judgements lists the judge's verdicts of this run, in order.
	Judgements []Judgement
	// Err is why the run did not complete: an error matching
	// graph.ErrInterrupted for an interrupt (answer it with
	// graph.WithResume), graph.ErrAborted, context.DeadlineExceeded for a
	// timeout, or a *graph.NodeError. Nil when the run completed.
	Err error
	// Graph is the graph run's own result: every task (route nodes and
	// their step numbers included), usage, the checkpoint, interrupts. Nil
	// when the run could not start (bad run options).
	Graph *graph.Result
}

func (a *Agent) result(gres *graph.Result, err error) *Result {
	res := &Result{Err: err, Graph: gres, Status: graph.StatusFailed}
	if gres == nil {
		return res
	}
	res.FinalState, res.Status = gres.State, gres.Status
	for _, n := range gres.Path {
		if a.nodes[n.Node] {
			res.Path = append(res.Path, n.Node)
		}
	}
	res.Iterations = len(res.Path)
	res.FinalMessage, _ = react.Answer(gres.State)
	if len(gres.Path) > 0 {
		last := gres.Path[len(gres.Path)-1]
		owner := strings.TrimSuffix(last.Node, "/route")
		res.LimitReached = res.Status == graph.StatusCompleted && !a.nodes[last.Node] && decisions.Get(gres.State)[owner] == pathLimit
		for _, j := range Judgements.Get(gres.State) {
			if j.Step >= gres.Path[0].Step {
				res.Judgements = append(res.Judgements, j)
			}
		}
	}
	res.Success = res.Status == graph.StatusCompleted && !res.LimitReached
	return res
}

// ToolCalls returns the records of the tool calls in an agent's state (in
// react.Calls), in the order the model asked for them in the conversation;
// records of calls no longer in the conversation come last, by step. Calls
// waiting for approval have no record yet.
func ToolCalls(s graph.State) []tool.Record {
	recs := react.Calls.Get(s)
	if len(recs) == 0 {
		return nil
	}
	out := make([]tool.Record, 0, len(recs))
	seen := make(map[string]bool, len(recs))
	for _, m := range react.Messages.Get(s) {
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			if rec, ok := recs[c.ID]; ok && !seen[c.ID] {
				seen[c.ID] = true
				out = append(out, rec)
			}
		}
	}
	rest := len(out)
	for id, rec := range recs {
		if !seen[id] {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out[rest:], func(x, y tool.Record) int {
		return cmp.Or(cmp.Compare(x.Step, y.Step), cmp.Compare(x.CallID, y.CallID))
	})
	return out
}
