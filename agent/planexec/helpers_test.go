package planexec_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// Every test must stop what it starts: step tasks, tool tasks, streams.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counter counts tool executions by "tool:argument", safely across
// parallel tasks.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

type queryArgs struct {
	Q string `json:"q"`
}

// lookup is a read tool; it counts its runs by query.
func lookup(c *counter) tool.Tool {
	return tool.MustFunc("lookup", "Look something up.",
		func(_ context.Context, a queryArgs) (string, error) {
			c.add("lookup:" + a.Q)
			return "found " + a.Q, nil
		}, tool.ReadOnly())
}

// publish is a write tool: it needs approval.
func publish(c *counter) tool.Tool {
	return tool.MustFunc("publish", "Publish a text.",
		func(_ context.Context, a queryArgs) (string, error) {
			c.add("publish:" + a.Q)
			return "published " + a.Q, nil
		}, tool.Summary(func(a queryArgs) string { return "Publish " + a.Q }))
}

func mustNew(t testing.TB, cfg planexec.Config) *graph.Graph {
	t.Helper()
	g, err := planexec.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func thread(saver checkpoint.Saver, id string) []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(id)}
}

func st(id, title string, deps ...string) planexec.Step {
	return planexec.Step{ID: id, Title: title, Description: "Do " + title + ".", DependsOn: deps}
}

// planReply is the planner's quick-assessment reply holding a plan.
func planReply(complexity string, replan []string, steps ...planexec.Step) llmtest.Turn {
	return llmtest.JSON(map[string]any{"complexity": complexity, "task": "the task", "steps": steps, "replan": replan})
}

func simplePlan(steps ...planexec.Step) llmtest.Turn { return planReply("simple", nil, steps...) }

var isTask = llmtest.JSON(map[string]string{"intent": "task"})

// inStep matches the requests of step id's loop, in any namespace depth:
// its first user message is the step's prompt.
func inStep(id string) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		if r.Node != react.ModelNode || !strings.Contains(r.Namespace, planexec.StepNode+":") {
			return false
		}
		for _, m := range r.Messages {
			if m.Role == llm.RoleUser {
				return strings.Contains(m.Text(), "Your step is "+id+":")
			}
		}
		return false
	}
}

// node matches requests from a node of the agent (not from a step).
func node(name string) llmtest.Matcher { return llmtest.Node(name) }

// askArgs is the JSON of an ask_user call.
func askCall(args string) llmtest.Turn {
	return llmtest.ToolCalls(llmtest.Call(planexec.AskToolName, args))
}

// interrupted checks that a run stopped with one interrupt and returns it.
func interrupted(t *testing.T, res *graph.Result, err error) graph.InterruptInfo {
	t.Helper()
	if !errors.Is(err, graph.ErrInterrupted) || res == nil || len(res.Interrupts) != 1 {
		var n int
		if res != nil {
			n = len(res.Interrupts)
		}
		t.Fatalf("err = %v with %d interrupts; want one interrupt", err, n)
	}
	return res.Interrupts[0]
}

// answer returns the delivered answer, failing the test without one.
func answer(t *testing.T, res *graph.Result) string {
	t.Helper()
	a, ok := planexec.Answer(res.State)
	if !ok {
		t.Fatalf("no answer delivered (status %s)", res.Status)
	}
	return a
}

// requestsFrom returns the requests a matcher accepts, in order.
func requestsFrom(m *llmtest.Model, match llmtest.Matcher) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range m.Requests() {
		if match(&r) {
			out = append(out, r)
		}
	}
	return out
}

// stepStatuses summarizes Steps as id → status.
func stepStatuses(s graph.State) map[string]planexec.StepStatus {
	out := map[string]planexec.StepStatus{}
	for id, r := range planexec.Steps.Get(s) {
		out[id] = r.Status
	}
	return out
}

func lastText(msgs []llm.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1].Text()
}

// quiet discards the agent's warnings in tests that provoke them.
var quiet = slog.New(slog.DiscardHandler)
