package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
)

// Two servers: an agent assistant of the local one has the remote's chat
// assistant as a tool (remote_agents, remote:NAME) and calls it over A2A,
// then over the LangGraph API; the remote's answer is the tool's result.
// A remote agent that cannot be reached is a tool error the model reads,
// and the run (and the thread) goes on.
func TestAgentCallsARemoteAgent(t *testing.T) {
	remoteModel := llmtest.New()
	remoteModel.Otherwise(llmtest.Text("Hello from the remote side."))
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Register("chat", chatSpec(remoteModel)); err != nil {
		t.Fatal(err)
	}
	remote := serveInBackground(t, rs)

	model := llmtest.New()
	model.Reply(
		llmtest.ToolCalls(llmtest.Call("greeter", `{"message":"say hello"}`)),
		llmtest.ToolCalls(llmtest.Call("broken", `{"message":"say hello"}`)),
		llmtest.ToolCalls(llmtest.Call("lg", `{"message":"say hello"}`)),
		llmtest.Text("Done."),
	)
	conf := `{"configurable":{"model":"test:agent","tools":[{"use":"remote:greeter","approve":"auto"},{"use":"remote:broken","approve":"auto"},{"use":"remote:lg","approve":"auto"}]}}`
	const id = "agent-with-remotes"
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "l.db"), Logger: quiet(),
		Assistants: []db.Assistant{{ID: id, GraphID: AgentGraph, Name: "hops", Config: json.RawMessage(conf)}}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.RegisterAgentWithRemotes(t.Context(), Models{Resolve: func(string) (llm.Model, error) { return model, nil }}, nil, map[string]config.RemoteAgent{
		"greeter": {A2A: remote.url + "/a2a/chat", AllowPrivate: true},
		"broken":  {A2A: "http://127.0.0.1:1/", AllowPrivate: true},
		"lg":      {LangGraph: &config.RemoteGraph{URL: remote.url, Assistant: "chat"}, AllowPrivate: true},
	})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	const thread = "5d7c2a1e-8b6f-4e0a-9c3d-2f1b0a9e8d7c"
	if code, body, _ := post(t, r.url+"/threads", `{"thread_id":"`+thread+`"}`); code != 200 {
		t.Fatalf("create thread: %d %s", code, body)
	}
	if code, out, _ := post(t, r.url+"/threads/"+thread+"/runs/wait", `{"assistant_id":"`+id+`","input":{"messages":[{"role":"user","content":"Ask the greeter."}]}}`); code != 200 {
		t.Fatalf("runs/wait: %d %s", code, out)
	}
	_, state, _ := get(t, r.url+"/threads/"+thread+"/state")
	var st struct {
		Values struct {
			Messages []struct {
				Type    string `json:"type"`
				Content any    `json:"content"`
			} `json:"messages"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(state), &st); err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, m := range st.Values.Messages {
		if m.Type == "tool" {
			tools = append(tools, toText(m.Content))
		}
	}
	if len(tools) != 3 || !strings.Contains(tools[0], "Hello from the remote side.") || !strings.Contains(tools[1], "remote agent broken") || tools[2] != "Hello from the remote side." {
		t.Fatalf("tool results %q; want the remote's answer over A2A, the unreachable agent's error, the remote's answer over the LangGraph API", tools)
	}
	if last := st.Values.Messages[len(st.Values.Messages)-1]; last.Type != "ai" || !strings.HasPrefix(toText(last.Content), "Done.") {
		t.Errorf("the run did not go on to the model's answer: %s", state)
	}
}
