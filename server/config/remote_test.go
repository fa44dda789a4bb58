package config

import (
	"strings"
	"testing"
)

// remote_agents parses; its URL is checked at load; tools name remote
// agents by remote:NAME; header values come from the environment.
func TestRemoteAgents(t *testing.T) {
	src := "remote_agents:\n  greeter:\n    a2a: https://agents.example/greeter\n    headers_env: {Authorization: GREETER_AUTH}\n" +
		"assistants:\n  - {graph: agent, name: n, tools: [remote:greeter]}\n"
	f, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	r := f.RemoteAgents["greeter"]
	if name, ok := f.Assistants[0].Tools[0].Remote(); !ok || name != "greeter" || r.A2A != "https://agents.example/greeter" {
		t.Errorf("remote agent %+v, tool %+v", r, f.Assistants[0].Tools[0])
	}
	lookup := func(k string) (string, bool) {
		return map[string]string{"GREETER_AUTH": "Bearer k"}[k], k == "GREETER_AUTH"
	}
	cfg, err := r.A2AConfig("greeter", lookup)
	if err != nil || cfg.Headers["Authorization"] != "Bearer k" || cfg.CardURL != r.A2A || cfg.Name != "greeter" {
		t.Errorf("a2a config %+v %v", cfg, err)
	}
	if _, err := r.A2AConfig("greeter", func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "GREETER_AUTH is not set") {
		t.Errorf("an unset header variable: %v", err)
	}
	for _, c := range []struct{ src, want string }{
		{"remote_agents:\n  g: {a2a: http://127.0.0.1:8080/}\n", "remote_agents.g.a2a: netguard: 127.0.0.1 is a loopback address"},
		{"remote_agents:\n  g: {a2a: ftp://agents.example/}\n", `remote_agents.g.a2a: "ftp://agents.example/" is not an absolute http or https URL`},
		{"remote_agents:\n  g: {a2a: https://agents.example/, allow_hosts: [other.example]}\n", "is not on the allowed hosts"},
		{"remote_agents:\n  g: {}\n", "remote_agents.g: set a2a"},
		{"remote_agents:\n  g: {langgraph: {url: https://lg.example}}\n", "remote_agents.g.langgraph.assistant: name the remote assistant"},
		{"remote_agents:\n  g: {langgraph: {url: http://10.0.0.5/, assistant: a}}\n", "remote_agents.g.langgraph.url: netguard: 10.0.0.5 is a private address"},
		{"remote_agents:\n  g: {a2a: https://agents.example/, langgraph: {url: https://lg.example, assistant: a}}\n", "set a2a or langgraph, not both"},
		{"remote_agents:\n  g h: {a2a: https://agents.example/}\n", "remote_agents.g h: the name is the tool's name"},
		{"remote_agents:\n  g: {a2a: https://agents.example/, card: x}\n", `unknown field "card" (known: a2a, langgraph`},
		{"assistants:\n  - {graph: agent, name: n, tools: [remote:nosuch]}\n", `"remote:nosuch" names remote agent "nosuch", which is not under remote_agents`},
		{"assistants:\n  - {graph: agent, name: n, tools: [\"remote:\"]}\n", `"remote:" is not remote:NAME`},
	} {
		if _, err := Parse([]byte(c.src), env(nil)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.src, err, c.want)
		}
	}
	f, err = Parse([]byte("remote_agents:\n  lg: {langgraph: {url: https://lg.example/api, assistant: planner}}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := f.RemoteAgents["lg"].RemoteGraphConfig("lg", nil); err != nil || c.URL != "https://lg.example/api" || c.Assistant != "planner" {
		t.Errorf("langgraph config %+v %v", c, err)
	}
	if _, err := Parse([]byte("remote_agents:\n  g: {a2a: http://127.0.0.1:8080/, allow_private: true}\n"), env(nil)); err != nil {
		t.Errorf("a loopback agent with allow_private: %v", err)
	}
}
