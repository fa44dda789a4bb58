package agentgraph

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool"
)

func fake(name string, readOnly bool) tool.Tool {
	opts := []tool.FuncOption{}
	if readOnly {
		opts = append(opts, tool.ReadOnly())
	}
	return tool.MustFunc(name, "a test tool", func(context.Context, struct{}) (string, error) { return name, nil }, opts...)
}

// toolbox is a Toolbox over fake tools (no connection).
func toolbox() *Toolbox {
	return &Toolbox{servers: map[string]*server{
		"files": {tools: []tool.Tool{fake("read", true), fake("write", false)}},
		"gh":    {prefix: "gh_", tools: []tool.Tool{fake("gh_read", true), fake("gh_issue", false)}},
		"dup":   {tools: []tool.Tool{fake("read", true)}},
	}}
}

func names(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Info().Name)
	}
	return out
}

// References resolve to tools in order, once each; the last reference of
// a tool sets its approval; the kind decides when none does.
func TestToolsResolve(t *testing.T) {
	tools, policy, err := toolbox().Tools([]config.ToolRef{
		{Use: "mcp:files"},
		{Use: "mcp:gh/issue", Approve: config.ApproveAuto},
		{Use: "mcp:files/read", Approve: config.ApproveAsk},
		{Use: "stop"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(tools), []string{"read", "write", "gh_issue", "stop"}; !slices.Equal(got, want) {
		t.Errorf("tools %v; want %v", got, want)
	}
	info := map[string]tool.Info{}
	for _, tl := range tools {
		info[tl.Info().Name] = tl.Info()
	}
	for name, want := range map[string]bool{"read": true, "write": true, "gh_issue": false, "stop": false} {
		if got := policy.NeedsApproval(info[name], json.RawMessage(`{}`)); got != want {
			t.Errorf("%s needs approval: %v; want %v", name, got, want)
		}
	}
}

// A remote agent's tool is offered by remote:NAME, with the reference's
// approval; an unknown remote agent is an error naming the reference.
func TestRemoteTools(t *testing.T) {
	tb := toolbox()
	tb.AddRemote(fake("greeter", false))
	tools, policy, err := tb.Tools([]config.ToolRef{{Use: "stop"}, {Use: "remote:greeter", Approve: config.ApproveAuto}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools); !slices.Equal(got, []string{"stop", "greeter"}) {
		t.Errorf("tools %v", got)
	}
	if policy.NeedsApproval(tools[1].Info(), json.RawMessage(`{}`)) {
		t.Error("the remote agent with approve: auto needs approval")
	}
	if _, _, err := tb.Tools([]config.ToolRef{{Use: "remote:nosuch"}}); err == nil || !strings.Contains(err.Error(), `tools[0]: "remote:nosuch" names remote agent "nosuch", which this server does not know`) {
		t.Errorf("an unknown remote agent: %v", err)
	}
}

// Unknown servers and tools and clashing names are errors naming the
// reference.
func TestToolsErrors(t *testing.T) {
	for _, c := range []struct {
		refs []config.ToolRef
		want string
	}{
		{[]config.ToolRef{{Use: "mcp:nosuch"}}, `tools[0]: "mcp:nosuch" names MCP server "nosuch", which this server has not connected (connected: dup, files, gh)`},
		{[]config.ToolRef{{Use: "stop"}, {Use: "mcp:gh/gh_read"}}, `tools[1]: MCP server gh has no tool "gh_read" (it has: read, issue)`},
		{[]config.ToolRef{{Use: "mcp:files"}, {Use: "mcp:dup"}}, `tools[1]: tool "read" of MCP server dup has the name of a tool of MCP server files`},
		{[]config.ToolRef{{Use: "rm"}}, `tools[0]: "rm" is not a built-in tool`},
		{[]config.ToolRef{{Use: "stop", Approve: "never"}}, `tools[0]: approve: "never" is not ask or auto`},
	} {
		if _, _, err := toolbox().Tools(c.refs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v; want %q", c.refs, err, c.want)
		}
	}
	if _, _, err := (*Toolbox)(nil).Tools([]config.ToolRef{{Use: "mcp:x"}}); err == nil || !strings.Contains(err.Error(), "(connected: none)") {
		t.Errorf("no toolbox: %v", err)
	}
}

// Without a model the agent answers from a scripted model that says so;
// an assistant's bad tools fail its graph with the field named.
func TestConstructor(t *testing.T) {
	noModel := func(string) (llm.Model, error) { return nil, nil }
	build := New(toolbox(), noModel, nil)
	g, err := build(context.Background(), runs.Assistant{ID: "a", Config: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), react.Input("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := react.Answer(res.State); got != ScriptedAnswer {
		t.Errorf("answer %q", got)
	}
	_, err = build(context.Background(), runs.Assistant{ID: "a", Config: json.RawMessage(`{"configurable":{"tools":["stop","mcp:files/nope"]}}`)})
	if err == nil || !strings.Contains(err.Error(), `assistant a: config.configurable: tools[1]: MCP server files has no tool "nope"`) {
		t.Errorf("bad tools: %v", err)
	}
}

// A config that does not decode, or a model that cannot be resolved, is
// an input error naming the field.
func TestConstructorInputErrors(t *testing.T) {
	broken := func(string) (llm.Model, error) { return nil, errors.New("unknown provider fake") }
	for _, c := range []struct {
		conf  string
		model ModelFunc
		want  string
	}{
		{`{"configurable":{"tools":"stop"}}`, nil, "config.configurable"},
		{`{"configurable":{"tools":[{"use":"stop","aprove":"ask"}]}}`, nil, `unknown field "aprove"`},
		{`{"configurable":{"model":"fake:x"}}`, broken, "assistant a: config.configurable.model: unknown provider fake"},
	} {
		if c.model == nil {
			c.model = func(string) (llm.Model, error) { return nil, nil }
		}
		_, err := New(nil, c.model, nil)(context.Background(), runs.Assistant{ID: "a", Config: json.RawMessage(c.conf)})
		var in *runs.InputError
		if !errors.As(err, &in) || in.Pointer != "/assistant_id" || !strings.Contains(in.Detail, c.want) {
			t.Errorf("%s: err = %v; want an input error at /assistant_id containing %q", c.conf, err, c.want)
		}
	}
}
