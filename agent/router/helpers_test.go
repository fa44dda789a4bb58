package router_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// Every test must stop what it starts: tool tasks, nested runs and stream
// goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ran counts executions by key, safely across parallel tasks.
type ran struct {
	mu   sync.Mutex
	n    map[string]int
	args map[string][]string
}

func (r *ran) add(k, arg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n, r.args = map[string]int{}, map[string][]string{}
	}
	r.n[k]++
	r.args[k] = append(r.args[k], arg)
}

func (r *ran) get(k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[k]
}

func (r *ran) argsOf(k string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.args[k]...)
}

type textArgs struct {
	Text string `json:"text"`
}

// echoTool is a read tool named name that returns prefix + its text
// argument and counts its runs.
func echoTool(r *ran, name, prefix string) tool.Tool {
	return tool.MustFunc(name, "Returns its text, prefixed.",
		func(_ context.Context, a textArgs) (string, error) {
			r.add(name, a.Text)
			return prefix + a.Text, nil
		}, tool.ReadOnly())
}

// fixedTool is a read tool that returns result whatever it is given.
func fixedTool(r *ran, name, result string) tool.Tool {
	return tool.MustFunc(name, "Returns a fixed result.",
		func(_ context.Context, a struct{}) (string, error) {
			r.add(name, "")
			return result, nil
		}, tool.ReadOnly())
}

// reactAgent is a sub-agent: a ReAct loop on m with tools.
func reactAgent(t testing.TB, m llm.Model, tools ...tool.Tool) *graph.Graph {
	t.Helper()
	g, err := react.New(react.Config{Model: m, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustNew(t testing.TB, cfg router.Config) *graph.Graph {
	t.Helper()
	g, err := router.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// routerRequests returns the requests the router model node made (in the
// root namespace).
func routerRequests(m *llmtest.Model) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range m.Requests() {
		if r.Namespace == "" {
			out = append(out, r)
		}
	}
	return out
}

// roles summarizes a history as "role:text" per message, tool calls as
// "assistant>name,name" and tool results as "tool(id):text".
func roles(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			names := make([]string, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				names[j] = c.Name
			}
			out[i] = "assistant>" + strings.Join(names, ",")
		case m.Role == llm.RoleTool:
			out[i] = fmt.Sprintf("tool(%s):%s", m.ToolCallID, m.Text())
		default:
			out[i] = string(m.Role) + ":" + m.Text()
		}
	}
	return out
}

// toolResult returns the tool message answering callID in msgs.
func toolResult(t testing.TB, msgs []llm.Message, callID string) llm.Message {
	t.Helper()
	for _, m := range msgs {
		if m.Role == llm.RoleTool && m.ToolCallID == callID {
			return m
		}
	}
	t.Fatalf("no tool result for %s in %v", callID, roles(msgs))
	return llm.Message{}
}

func finished(t testing.TB, s graph.State) router.Outcome {
	t.Helper()
	o, ok := router.Finished(s)
	if !ok {
		t.Fatal("the turn has no outcome")
	}
	if a, _ := react.Answer(s); a != o.Answer {
		t.Errorf("the history's answer %q differs from the outcome's %q", a, o.Answer)
	}
	return o
}

// quietLog discards the router's logs in tests that provoke failures.
var quietLog = slog.New(slog.DiscardHandler)
