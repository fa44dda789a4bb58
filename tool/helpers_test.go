package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// fakeModel answers from a script: reply i answers call i; past the end it
// answers "done". It keeps every request it was sent.
type fakeModel struct {
	mu       sync.Mutex
	replies  []llm.Message
	requests []*llm.Request
	err      error
}

func (m *fakeModel) Name() string { return "fake:scripted" }

func (m *fakeModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req.Clone())
	if m.err != nil {
		return nil, m.err
	}
	i := len(m.requests) - 1
	msg := llm.Assistant("done")
	if i < len(m.replies) {
		msg = m.replies[i]
	}
	msg.ID = llm.NewID()
	reason := llm.FinishStop
	if len(msg.ToolCalls) > 0 {
		reason = llm.FinishToolCalls
	}
	return &llm.Response{Message: msg, FinishReason: reason, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

func (m *fakeModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		c := llm.Chunk{Text: resp.Message.Text(), FinishReason: resp.FinishReason}
		for i, tc := range resp.Message.ToolCalls {
			c.ToolCalls = append(c.ToolCalls, llm.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		yield(c, nil)
	}
}

func (m *fakeModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

func (m *fakeModel) request(i int) *llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[i]
}

var (
	msgsKey    = llm.NewMessagesKey("messages")
	recordsKey = tool.NewRecordsKey("tool_calls")
)

// counter counts executions per name, safely across parallel tasks.
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

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

// newNode builds a node with the test keys.
func newNode(t testing.TB, cfg tool.NodeConfig) *tool.Node {
	t.Helper()
	cfg.Messages = msgsKey
	if cfg.Records == nil {
		cfg.Records = recordsKey
	}
	n, err := tool.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// agentGraph: START → model → (tools → model)* → END.
func agentGraph(t testing.TB, m llm.Model, n *tool.Node) *graph.Graph {
	t.Helper()
	b := graph.New(msgsKey, recordsKey)
	b.AddNode("model", func(ctx context.Context, s graph.State) (graph.Output, error) {
		req := &llm.Request{Messages: tool.ForModel(msgsKey.Get(s), tool.Limit{}), Tools: n.Specs()}
		resp, err := llm.Call(ctx, m, req)
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(msgsKey, resp.Message)), nil
	})
	b.SetEntry("model")
	n.Wire(b, "tools", "model", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// approvalGraph is agentGraph with the tool calls going through the
// approval middleware under policy, as the agents run them.
func approvalGraph(t testing.TB, m llm.Model, n *tool.Node, policy tool.Policy) *graph.Graph {
	t.Helper()
	chain, err := middleware.NewChain(middleware.Approval(policy))
	if err != nil {
		t.Fatal(err)
	}
	runner := middleware.NewToolRunner(chain, n)
	b := graph.New(msgsKey, recordsKey)
	b.AddNode("model", func(ctx context.Context, s graph.State) (graph.Output, error) {
		req := &llm.Request{Messages: tool.ForModel(msgsKey.Get(s), tool.Limit{}), Tools: n.Specs()}
		resp, err := llm.Call(ctx, m, req)
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(msgsKey, resp.Message)), nil
	})
	b.SetEntry("model")
	graph.AddSendNode(b, "tools", func(ctx context.Context, s graph.State, call llm.ToolCall) (graph.Output, error) {
		msgs := msgsKey.Get(s)
		ran, err := runner.Run(ctx, s, call, msgs[len(msgs)-1].ToolCalls)
		if err != nil {
			return nil, err
		}
		return ran.Update, nil
	})
	b.AddFanout("model", n.Route("tools", graph.END), "tools", graph.END)
	b.AddEdge("tools", "model")
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func userInput(text string) graph.Update {
	return graph.Writes(graph.Append(msgsKey, llm.User(text)))
}

func threadOpts(s checkpoint.Saver, thread string) []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(s), graph.WithThread(thread)}
}

// toolMessages returns the tool messages of a history, in order.
func toolMessages(msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// summarize lists tool messages as "callID:text" (prefixed "!" for errors).
func summarize(msgs []llm.Message) []string {
	var out []string
	for _, m := range toolMessages(msgs) {
		mark := ""
		if m.IsError {
			mark = "!"
		}
		out = append(out, fmt.Sprintf("%s%s:%s", mark, m.ToolCallID, m.Text()))
	}
	return out
}

// logBuffer is a slog handler's output, safe for parallel writers.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	var buf logBuffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// echoArgs is the arguments type of the test tools.
type echoArgs struct {
	Text string `json:"text"`
}

// echoTool counts its runs by argument text and returns "echo:<text>".
func echoTool(t testing.TB, name string, c *counter, opts ...tool.FuncOption) tool.Tool {
	t.Helper()
	return tool.MustFunc(name, "echoes its text", func(_ context.Context, a echoArgs) (string, error) {
		c.add(name + ":" + a.Text)
		return "echo:" + a.Text, nil
	}, opts...)
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func isInterrupted(err error) bool { return errors.Is(err, graph.ErrInterrupted) }
