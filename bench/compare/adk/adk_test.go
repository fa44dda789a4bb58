package adk

// ADK-go (google.golang.org/adk/v2) side.
//
// ADK is an agent framework: there is no way to invoke an ADK agent without a
// runner.Runner and a session.Service, because every event an agent yields is
// appended to a session (and state changes travel as event.Actions.StateDelta).
// So every ADK sub-benchmark measures, per iteration:
//
//	create a fresh in-memory session (session.InMemoryService)
//	→ runner.Run(...) with a user message, draining the event iterator
//	  (the runner appends every event to the session)
//	→ delete the session (otherwise b.N sessions pile up in memory).
//
// Two ADK variants are measured:
//
//   - "adk": the closest equivalent of a graph engine that ADK v2.2.0 ships —
//     the workflow package (workflow.NewFunctionNode nodes wired with
//     workflow.Edge, a workflow.JoinNode barrier for fan-in), wrapped as an
//     agent by workflowagent.New and run through the runner. Like eino it is
//     data-flow: a node's output is its successor's input; the start node
//     receives the user message text. Each node yields one event.
//
//   - "adk-agents": the classic multi-agent composition — a
//     sequentialagent of custom agents (agent.New with a Run func that yields
//     one event whose StateDelta updates session state), and for fan-out a
//     sequentialagent[source, parallelagent(w0..w99), join]. ADK session
//     state has no reducers (StateDelta is last-writer-wins), so the 100
//     parallel workers each write their own key "wI"=1 and the join agent
//     sums those keys from session state.

import (
	"context"
	"iter"
	"strconv"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/agent/workflowagents/parallelagent"
	"google.golang.org/adk/v2/agent/workflowagents/sequentialagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/workflow"
	"google.golang.org/genai"
)

const (
	adkApp  = "bench"
	adkUser = "user"
)

// adkHarness runs one root agent through a runner backed by an in-memory
// session service, one fresh session per invocation.
type adkHarness struct {
	svc session.Service
	r   *runner.Runner
	msg *genai.Content
}

func newADKHarness(b *testing.B, root agent.Agent) *adkHarness {
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: adkApp, Agent: root, SessionService: svc})
	must(b, err)
	return &adkHarness{svc: svc, r: r, msg: genai.NewContentFromText("0", genai.RoleUser)}
}

// run invokes the root agent once in a fresh session created with the given
// initial state, calls onEvent for each event, and deletes the session.
func (h *adkHarness) run(b *testing.B, ctx context.Context, state map[string]any, onEvent func(*session.Event)) {
	created, err := h.svc.Create(ctx, &session.CreateRequest{AppName: adkApp, UserID: adkUser, State: state})
	must(b, err)
	id := created.Session.ID()
	for ev, err := range h.r.Run(ctx, adkUser, id, h.msg, agent.RunConfig{}) {
		must(b, err)
		onEvent(ev)
	}
	must(b, h.svc.Delete(ctx, &session.DeleteRequest{AppName: adkApp, UserID: adkUser, SessionID: id}))
}

// --- "adk": workflow graph engine -----------------------------------------

func benchChainADK(b *testing.B, n int) {
	ctx := context.Background()
	nodes := make([]workflow.Node, 0, n+1)
	nodes = append(nodes, workflow.Start)
	// n1 receives the user message ("0": the initial counter) as a string.
	nodes = append(nodes, workflow.NewFunctionNode(chainNode(1), func(_ agent.Context, in string) (int, error) {
		count, err := strconv.Atoi(in)
		return count + 1, err
	}, workflow.NodeConfig{}))
	for i := 2; i <= n; i++ {
		nodes = append(nodes, workflow.NewFunctionNode(chainNode(i), func(_ agent.Context, count int) (int, error) {
			return count + 1, nil
		}, workflow.NodeConfig{}))
	}
	root, err := workflowagent.New(workflowagent.Config{Name: "chain", Edges: workflow.Chain(nodes...)})
	must(b, err)
	h := newADKHarness(b, root)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		got := -1
		h.run(b, ctx, nil, func(ev *session.Event) {
			if v, ok := ev.Output.(int); ok {
				got = v // the last node's output is the final counter
			}
		})
		check(b, "adk", got, n)
	}
}

func benchFanoutADK(b *testing.B, n int) {
	ctx := context.Background()
	source := workflow.NewFunctionNode("source", func(_ agent.Context, in string) (int, error) {
		return strconv.Atoi(in)
	}, workflow.NodeConfig{})
	workers := make([]workflow.Node, n)
	for i := range n {
		workers[i] = workflow.NewFunctionNode(worker(i), func(_ agent.Context, _ int) (int, error) {
			return 1, nil
		}, workflow.NodeConfig{})
	}
	// JoinNode waits for every predecessor and outputs map[predecessor]output.
	join := workflow.NewJoinNode("join")
	edges := workflow.NewEdgeBuilder().
		Add(workflow.Start, source).
		AddFanOut(source, workers...).
		AddFanIn(join, workers...).
		Build()
	root, err := workflowagent.New(workflowagent.Config{Name: "fanout", Edges: edges})
	must(b, err)
	h := newADKHarness(b, root)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		got := -1
		h.run(b, ctx, nil, func(ev *session.Event) {
			if m, ok := ev.Output.(map[string]any); ok { // only the join outputs a map
				got = 0
				for _, v := range m {
					got += v.(int)
				}
			}
		})
		check(b, "adk", got, n)
	}
}

// --- "adk-agents": sequential / parallel agents of custom agents -----------

// adkAgent builds a custom agent whose Run yields exactly one event.
func adkAgent(b *testing.B, name string, fn func(ctx agent.InvocationContext, ev *session.Event) error) agent.Agent {
	a, err := agent.New(agent.Config{
		Name: name,
		Run: func(ctx agent.InvocationContext) iter.Seq2[*session.Event, error] {
			return func(yield func(*session.Event, error) bool) {
				ev := session.NewEvent(ctx, ctx.InvocationID())
				if err := fn(ctx, ev); err != nil {
					yield(nil, err)
					return
				}
				yield(ev, nil)
			}
		},
	})
	must(b, err)
	return a
}

func stateInt(ctx agent.InvocationContext, key string) (int, error) {
	v, err := ctx.Session().State().Get(key)
	if err != nil {
		return 0, err
	}
	return v.(int), nil
}

func benchChainADKAgents(b *testing.B, n int) {
	ctx := context.Background()
	subs := make([]agent.Agent, n)
	for i := range n {
		subs[i] = adkAgent(b, chainNode(i+1), func(ctx agent.InvocationContext, ev *session.Event) error {
			count, err := stateInt(ctx, "count")
			ev.Actions.StateDelta["count"] = count + 1
			return err
		})
	}
	root, err := sequentialagent.New(sequentialagent.Config{AgentConfig: agent.Config{Name: "chain", SubAgents: subs}})
	must(b, err)
	h := newADKHarness(b, root)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		got := -1
		h.run(b, ctx, map[string]any{"count": 0}, func(ev *session.Event) {
			if v, ok := ev.Actions.StateDelta["count"].(int); ok {
				got = v
			}
		})
		check(b, "adk-agents", got, n)
	}
}

func benchFanoutADKAgents(b *testing.B, n int) {
	ctx := context.Background()
	source := adkAgent(b, "source", func(agent.InvocationContext, *session.Event) error { return nil })
	workers := make([]agent.Agent, n)
	for i := range n {
		key := worker(i)
		workers[i] = adkAgent(b, key, func(_ agent.InvocationContext, ev *session.Event) error {
			ev.Actions.StateDelta[key] = 1
			return nil
		})
	}
	par, err := parallelagent.New(parallelagent.Config{AgentConfig: agent.Config{Name: "workers", SubAgents: workers}})
	must(b, err)
	join := adkAgent(b, "join", func(ctx agent.InvocationContext, ev *session.Event) error {
		sum := 0
		for i := range n {
			v, err := stateInt(ctx, worker(i))
			if err != nil {
				return err
			}
			sum += v
		}
		ev.Actions.StateDelta["sum"] = sum
		return nil
	})
	root, err := sequentialagent.New(sequentialagent.Config{AgentConfig: agent.Config{
		Name: "fanout", SubAgents: []agent.Agent{source, par, join},
	}})
	must(b, err)
	h := newADKHarness(b, root)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		got := -1
		h.run(b, ctx, nil, func(ev *session.Event) {
			if v, ok := ev.Actions.StateDelta["sum"].(int); ok {
				got = v
			}
		})
		check(b, "adk-agents", got, n)
	}
}
