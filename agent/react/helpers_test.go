package react_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Every test must stop what it starts: tool tasks and stream goroutines.
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

type cityArgs struct {
	City string `json:"city"`
}

type emailArgs struct {
	To   string `json:"to"`
	Body string `json:"body"`
}

// weather is a read tool; it counts its runs in r.
func weather(r *ran) tool.Tool {
	return tool.MustFunc("weather", "Current weather in a city.",
		func(_ context.Context, a cityArgs) (string, error) {
			r.add("weather:" + a.City)
			return "sunny in " + a.City, nil
		}, tool.ReadOnly())
}

// search is a read tool returning a result of n runes.
func search(r *ran, n int) tool.Tool {
	return tool.MustFunc("search", "Search the web.",
		func(_ context.Context, a struct {
			Q string `json:"q"`
		}) (string, error) {
			r.add("search:" + a.Q)
			b := make([]byte, n)
			for i := range b {
				b[i] = 'x'
			}
			return string(b), nil
		}, tool.ReadOnly())
}

// sendEmail is a write tool: it needs approval unless the policy says
// otherwise.
func sendEmail(r *ran) tool.Tool {
	return tool.MustFunc("send_email", "Send an email.",
		func(_ context.Context, a emailArgs) (string, error) {
			r.add("send_email:" + a.To)
			return "sent to " + a.To, nil
		}, tool.Summary(func(a emailArgs) string { return "Email " + a.To }))
}

func mustNew(t testing.TB, cfg react.Config) *graph.Graph {
	t.Helper()
	g, err := react.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func threadOpts(thread string) []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread(thread)}
}

// roles summarizes a history as "role" or "role:text" per message, tool
// calls as "assistant>name,name".
func roles(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			s := "assistant>"
			for j, c := range m.ToolCalls {
				if j > 0 {
					s += ","
				}
				s += c.Name
			}
			out[i] = s
		case m.Role == llm.RoleTool:
			out[i] = fmt.Sprintf("tool(%s):%s", m.ToolCallID, m.Text())
		default:
			out[i] = string(m.Role) + ":" + m.Text()
		}
	}
	return out
}
