package config

import (
	"strings"
	"testing"
)

func TestMiddlewareSection(t *testing.T) {
	f, err := Parse([]byte("models: {cheap: \"openai:gpt-4o-mini\"}\nassistants:\n  - graph: agent\n    name: n\n    middleware:\n"+
		"      - {name: pii, strategy: hash, on: [input], patterns: {ticket: \"TCK-[0-9]+\"}}\n"+
		"      - {name: tool_limit, tool: search, run_limit: 2}\n"+
		"      - {name: tool_selector, model: cheap, max_tools: 3}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	mw := f.Assistants[0].Middleware
	if len(mw) != 3 || mw[0].Strategy != "hash" || mw[0].Patterns["ticket"] != "TCK-[0-9]+" || mw[1].RunLimit != 2 || mw[2].Model != "cheap" {
		t.Errorf("middleware = %+v", mw)
	}
	agent := func(m string) string {
		return "assistants:\n  - graph: agent\n    name: n\n    middleware: [" + m + "]\n"
	}
	for _, c := range []struct{ src, want string }{
		{agent("{name: shout}"), `assistants[0].middleware[0]: .name: "shout" is not one of pii`},
		{agent("{name: pii, on: [everything]}"), `.on: "everything" is not one of input, output, tool_results`},
		{agent("{name: pii, patterns: {bad: \"(\"}}"), `.patterns.bad: not a usable regular expression`},
		{agent("{name: tool_limit, tool: x}"), ".run_limit: give run_limit or thread_limit"},
		{agent("{name: offload, keep: 2}"), ".keep: offload does not take keep"},
		{agent("{name: tool_selector, max_tools: 2, model: nosuch}"), `middleware[0].model: "nosuch" is neither a name under models`},
		{agent("{name: pii, strategi: mask}"), `unknown field "strategi"`},
		{"assistants:\n  - {graph: planner, name: n, middleware: [{name: pii}]}\n", `assistants[0].middleware[0]: only assistants of graph "agent" take middleware`},
	} {
		_, err := Parse([]byte(c.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.src, err, c.want)
		}
	}
}
