package builder_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// Every test must stop what it starts: run goroutines, tool tasks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ran counts tool executions by "tool:argument", safely across parallel
// tasks.
type ran struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *ran) add(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[k]++
}

func (r *ran) get(k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[k]
}

// lookup is a read tool: it runs at once.
func lookup(r *ran) tool.Tool {
	return tool.MustFunc("lookup", "Look up an order.",
		func(_ context.Context, a struct {
			Order string `json:"order"`
		}) (string, error) {
			r.add("lookup:" + a.Order)
			return "order " + a.Order + " shipped", nil
		}, tool.ReadOnly())
}

// refund is a write tool: it needs a person's approval.
func refund(r *ran) tool.Tool {
	return tool.MustFunc("refund", "Refund an order.",
		func(_ context.Context, a struct {
			Order string `json:"order"`
		}) (string, error) {
			r.add("refund:" + a.Order)
			return "refunded " + a.Order, nil
		})
}

// inNode matches the requests of an LLM node's model (inside its
// subgraph's namespace).
func inNode(name string) llmtest.Matcher { return llmtest.Namespace(name + ":") }

// asked matches the judge's requests about condition.
func asked(condition string) llmtest.Matcher {
	return llmtest.LastUserContains("Condition: " + condition)
}

// verdict is a scripted judge reply.
func verdict(holds bool) llmtest.Turn {
	return llmtest.JSON(map[string]any{"holds": holds, "reason": fmt.Sprintf("scripted %v", holds)})
}

func mustBuild(t testing.TB, b *builder.Builder, m llm.Model) *builder.Agent {
	t.Helper()
	a, err := b.Build(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func threadOpts(thread string) []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread(thread)}
}

// texts summarizes a history as "role:text" per message, tool calls as
// "assistant>name".
func texts(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			out[i] = "assistant>" + m.ToolCalls[0].Name
		default:
			out[i] = string(m.Role) + ":" + m.Text()
		}
	}
	return out
}

// countMatching counts the requests m matches.
func countMatching(reqs []llmtest.Request, m llmtest.Matcher) int {
	n := 0
	for i := range reqs {
		if m(&reqs[i]) {
			n++
		}
	}
	return n
}
