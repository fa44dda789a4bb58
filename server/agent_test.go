//go:build unix

package server

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/tool"
)

// everythingServer is the MCP reference server's entry script; the test
// is skipped without it (failed under TRELLIS_REQUIRE_SERVICES=1).
func everythingServer(t *testing.T) string {
	t.Helper()
	entry := os.Getenv("TRELLIS_MCP_EVERYTHING")
	_, nodeErr := exec.LookPath("node")
	_, statErr := os.Stat(entry)
	if entry == "" || nodeErr != nil || statErr != nil {
		msg := "this test needs node and TRELLIS_MCP_EVERYTHING (the entry script of @modelcontextprotocol/server-everything; .ci/run installs it)"
		if testenv.Required() {
			t.Fatal(testenv.RequireVar + "=1 but " + msg)
		}
		t.Skip(msg)
	}
	return entry
}

// An assistant of graph "agent" declared with MCP tools: its scripted
// model calls the reference server's echo (a read tool: it runs at once)
// and get-sum (put under approval by the config): the first run's state
// holds echo's result; the second stops with a tool-approval interrupt
// carrying its answer schema, and resuming it with command.resume runs
// the tool.
func TestAgentWithMCPTools(t *testing.T) {
	entry := everythingServer(t)
	model := llmtest.New()
	model.Reply(
		llmtest.ToolCalls(llmtest.Call("echo", `{"message":"hi there"}`)),
		llmtest.Text("It said hi there."),
		llmtest.ToolCalls(llmtest.Call("get-sum", `{"a":20,"b":22}`)),
		llmtest.Text("The sum is 42."),
	)
	var resolved []string
	models := Models{Resolve: func(spec string) (llm.Model, error) {
		resolved = append(resolved, spec)
		return model, nil
	}}
	conf := `{"configurable":{"model":"test:agent","system_prompt":"Use the tools.",` +
		`"tools":["mcp:everything/echo",{"use":"mcp:everything/get-sum","approve":"ask"},"stop"]}}`
	const id = "agent-with-mcp"
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet(),
		Assistants: []db.Assistant{{ID: id, GraphID: AgentGraph, Name: "MCP agent", Config: json.RawMessage(conf)}}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.RegisterAgent(t.Context(), models, map[string]config.MCPServer{
		"everything": {Command: "node", Args: []string{entry, "stdio"}},
	})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	r := serveInBackground(t, s)

	const thread = "0b8f3f64-4c36-4a52-8f4e-6a3c1d2e9b70"
	if code, body, _ := post(t, r.url+"/threads", `{"thread_id":"`+thread+`"}`); code != 200 {
		t.Fatalf("create thread: %d %s", code, body)
	}
	run := func(body string) string {
		t.Helper()
		code, out, _ := post(t, r.url+"/threads/"+thread+"/runs/wait", body)
		if code != 200 {
			t.Fatalf("runs/wait %s: %d %s", body, code, out)
		}
		return out
	}
	run(`{"assistant_id":"` + id + `","input":{"messages":[{"role":"user","content":"Echo hi there."}]}}`)
	_, state, _ := get(t, r.url+"/threads/"+thread+"/state")
	var st struct {
		Values struct {
			Messages []struct {
				Type    string `json:"type"`
				Content any    `json:"content"`
			} `json:"messages"`
		} `json:"values"`
		Interrupts []struct {
			ID             string          `json:"id"`
			Value          json.RawMessage `json:"value"`
			ResponseSchema json.RawMessage `json:"response_schema"`
		} `json:"interrupts"`
	}
	decode := func(raw string) {
		t.Helper()
		st.Values.Messages, st.Interrupts = nil, nil
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatalf("state: %v: %s", err, raw)
		}
	}
	decode(state)
	var toolResults []string
	for _, m := range st.Values.Messages {
		if m.Type == "tool" {
			toolResults = append(toolResults, strings.TrimSpace(toText(m.Content)))
		}
	}
	if len(toolResults) != 1 || !strings.Contains(toolResults[0], "Echo: hi there") {
		t.Fatalf("tool results in the state: %q; want echo's", toolResults)
	}
	if n := len(st.Values.Messages); n != 4 || st.Values.Messages[3].Type != "ai" {
		t.Errorf("%d messages after the first run: %s", n, state)
	}
	if len(resolved) != 1 || resolved[0] != "test:agent" {
		t.Errorf("resolved models %v; want test:agent once", resolved)
	}
	if req := model.Requests()[0]; req.System() != "Use the tools." || len(req.Tools) != 3 {
		t.Errorf("the model got system %q and %d tools; want the configured prompt and 3 tools", req.System(), len(req.Tools))
	}

	// get-sum needs approval: the run stops with an interrupt.
	run(`{"assistant_id":"` + id + `","input":{"messages":[{"role":"user","content":"Add 20 and 22."}]}}`)
	_, state, _ = get(t, r.url+"/threads/"+thread+"/state")
	decode(state)
	if len(st.Interrupts) != 1 {
		t.Fatalf("interrupts after the second run: %s", state)
	}
	var req tool.ApprovalRequest
	if err := json.Unmarshal(st.Interrupts[0].Value, &req); err != nil || req.Kind != tool.ApprovalKind || req.Tool != "get-sum" {
		t.Fatalf("interrupt value %s (%v); want a tool approval of get-sum", st.Interrupts[0].Value, err)
	}
	if len(st.Interrupts[0].ResponseSchema) == 0 {
		t.Errorf("the approval interrupt has no response schema: %s", state)
	}
	for _, m := range st.Values.Messages {
		if m.Type == "tool" && strings.Contains(toText(m.Content), "42") {
			t.Fatalf("get-sum ran before it was approved: %s", state)
		}
	}

	// An answer outside the schema is refused; an unknown action asks
	// again, saying why; an approval runs the call.
	if code, out, _ := post(t, r.url+"/threads/"+thread+"/runs/wait", `{"assistant_id":"`+id+`","command":{"resume":42}}`); code/100 != 4 {
		t.Errorf("an answer outside the schema: %d %s; want a 4xx", code, out)
	}
	if out := run(`{"assistant_id":"` + id + `","command":{"resume":{"action":"maybe"}}}`); !strings.Contains(out, `"problem":"The answer's action \"maybe\"`) {
		t.Errorf("an unknown action: %s; want the question again with the problem", out)
	}
	run(`{"assistant_id":"` + id + `","command":{"resume":{"action":"approve"}}}`)
	_, state, _ = get(t, r.url+"/threads/"+thread+"/state")
	decode(state)
	last := st.Values.Messages[len(st.Values.Messages)-2]
	if len(st.Interrupts) != 0 || last.Type != "tool" || !strings.Contains(toText(last.Content), "42") {
		t.Fatalf("after approval: %s", state)
	}
	if final := st.Values.Messages[len(st.Values.Messages)-1]; toText(final.Content) != "The sum is 42." {
		t.Errorf("final answer %v", final.Content)
	}
}

// toText flattens LangChain message content (a string or a list of
// parts).
func toText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				s, _ := m["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// An MCP server that cannot start fails RegisterAgent with an error
// naming it, and nothing is left running.
func TestAgentMCPServerThatCannotStart(t *testing.T) {
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.RegisterAgent(t.Context(), Models{}, map[string]config.MCPServer{
		"broken": {Command: filepath.Join(t.TempDir(), "no-such-program")},
	})
	if err == nil || !strings.Contains(err.Error(), "mcp_servers.broken") {
		t.Fatalf("err = %v; want it to name mcp_servers.broken", err)
	}
}

// Without MCP servers or a model: the default agent assistant answers
// with the scripted line saying no model is configured, and an assistant
// created over the API naming an MCP server the file does not declare is
// refused when a run is created, with the field named.
func TestAgentOverTheAPI(t *testing.T) {
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterAgent(t.Context(), Models{}, nil); err != nil {
		s.Close()
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	code, out, _ := post(t, r.url+"/runs/wait", `{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"hi"}]}}`)
	if code != 200 || !strings.Contains(out, "No model is configured for this server") {
		t.Errorf("default agent: %d %s", code, out)
	}
	code, out, _ = post(t, r.url+"/assistants", `{"assistant_id":"bad-tools","graph_id":"agent","config":{"configurable":{"tools":["stop","mcp:files"]}}}`)
	if code != 200 {
		t.Fatalf("create assistant: %d %s", code, out)
	}
	code, out, _ = post(t, r.url+"/runs/wait", `{"assistant_id":"bad-tools","input":{"messages":[{"role":"user","content":"hi"}]}}`)
	if code/100 != 4 || !strings.Contains(out, `tools[1]: \"mcp:files\" names MCP server \"files\"`) {
		t.Errorf("bad tools: %d %s; want a 4xx naming tools[1]", code, out)
	}
}
