package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// nameAskerSpec is a message-based remote agent: it asks the person's
// name (an ask_human interrupt) and answers "Hello, NAME: TASK". runs
// counts the node's runs that got the answer.
func nameAskerSpec(answered *atomic.Int32) runs.GraphSpec {
	msgs := llm.NewMessagesKey("messages")
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(msgs)
		b.AddNode("ask", func(ctx context.Context, st graph.State) (graph.Output, error) {
			name, err := graph.Interrupt[string](ctx, map[string]any{"kind": "ask_human", "question": "Whom should I greet?"})
			if err != nil {
				return nil, err
			}
			answered.Add(1)
			task := ""
			if m := msgs.Get(st); len(m) > 0 {
				task = m[len(m)-1].Text()
			}
			return graph.Writes(graph.Append(msgs, llm.Assistant("Hello, "+name+": "+task))), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}
}

// Two servers: a local agent assistant with a remote sub-agent
// (config.configurable.agents: [remote:NAME]) is a router, whose model
// hands the request to the remote assistant over the LangGraph API and
// over A2A. The remote's question stops the local run as its interrupt;
// the answer given on the local API goes back down to the same remote
// thread or task, and the remote's answer is the sub-agent call's result.
func TestRouterRemoteSubAgent(t *testing.T) {
	for _, via := range []string{"langgraph", "a2a"} {
		t.Run(via, func(t *testing.T) {
			var answered atomic.Int32
			rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			if err := rs.Register("greeter", nameAskerSpec(&answered)); err != nil {
				t.Fatal(err)
			}
			remote := serveInBackground(t, rs)

			model := llmtest.New()
			model.Reply(
				llmtest.ToolCalls(llmtest.Call("greeter", `{"task":"greet warmly"}`)),
				llmtest.Text("The greeter is done."),
			)
			conf := `{"configurable":{"model":"test:router","agents":["remote:greeter"]}}`
			const id = "router-with-remote"
			s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "l.db"), Logger: quiet(),
				Assistants: []db.Assistant{{ID: id, GraphID: AgentGraph, Name: "desk", Config: json.RawMessage(conf)}}})
			if err != nil {
				t.Fatal(err)
			}
			ra := config.RemoteAgent{LangGraph: &config.RemoteGraph{URL: remote.url, Assistant: "greeter"}, AllowPrivate: true, Description: "Greets people."}
			if via == "a2a" {
				ra = config.RemoteAgent{A2A: remote.url + "/a2a/greeter", AllowPrivate: true, Description: "Greets people."}
			}
			if err := s.RegisterAgentWithRemotes(t.Context(), Models{Resolve: func(string) (llm.Model, error) { return model, nil }}, nil, map[string]config.RemoteAgent{"greeter": ra}); err != nil {
				s.Close()
				t.Fatal(err)
			}
			r := serveInBackground(t, s)
			const thread = "6e8d3b2f-9c70-4f1b-8d4e-3a2c1b0f9e8d"
			if code, body, _ := post(t, r.url+"/threads", `{"thread_id":"`+thread+`"}`); code != 200 {
				t.Fatalf("create thread: %d %s", code, body)
			}
			if code, out, _ := post(t, r.url+"/threads/"+thread+"/runs/wait", `{"assistant_id":"`+id+`","input":{"messages":[{"role":"user","content":"Greet someone."}]}}`); code != 200 {
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
				Interrupts []struct {
					Value json.RawMessage `json:"value"`
				} `json:"interrupts"`
			}
			if err := json.Unmarshal([]byte(state), &st); err != nil {
				t.Fatal(err)
			}
			if len(st.Interrupts) != 1 || !strings.Contains(string(st.Interrupts[0].Value), "Whom should I greet?") {
				t.Fatalf("the local thread waits on %s; want the remote's question", state)
			}
			if answered.Load() != 0 {
				t.Fatalf("the remote ran past its question before the answer")
			}
			if code, out, _ := post(t, r.url+"/threads/"+thread+"/runs/wait", `{"assistant_id":"`+id+`","command":{"resume":"Ada"}}`); code != 200 {
				t.Fatalf("resume: %d %s", code, out)
			}
			_, state, _ = get(t, r.url+"/threads/"+thread+"/state")
			st.Interrupts = nil
			if err := json.Unmarshal([]byte(state), &st); err != nil {
				t.Fatal(err)
			}
			var tools []string
			for _, m := range st.Values.Messages {
				if m.Type == "tool" {
					tools = append(tools, toText(m.Content))
				}
			}
			if len(st.Interrupts) != 0 || len(tools) != 1 || tools[0] != "Hello, Ada: greet warmly" {
				t.Fatalf("sub-agent results %q, interrupts %d; want the remote's answer to the local answer", tools, len(st.Interrupts))
			}
			if last := st.Values.Messages[len(st.Values.Messages)-1]; last.Type != "ai" || toText(last.Content) != "The greeter is done." {
				t.Errorf("the router did not finish the turn: %s", state)
			}
			if n := answered.Load(); n != 1 {
				t.Errorf("the remote's node went past its question %d times; want 1", n)
			}
		})
	}
}
