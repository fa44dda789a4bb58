package config

import (
	"strings"
	"testing"
	"time"
)

func TestMiddlewareSection(t *testing.T) {
	f, err := Parse([]byte("models: {cheap: \"openai:gpt-4o-mini\"}\nassistants:\n  - graph: agent\n    name: n\n    middleware:\n"+
		"      - {name: pii, strategy: hash, on: [input], patterns: {ticket: \"TCK-[0-9]+\"}}\n"+
		"      - {name: tool_limit, tool: search, run_limit: 2}\n"+
		"      - {name: tool_selector, model: cheap, max_tools: 3}\n"+
		"      - {name: dynamic_prompt, template: 'You help {{context \"user\"}}.'}\n"+
		"      - {name: retry, max_attempts: 4, initial_backoff: 1s, max_backoff: 10s}\n"+
		"      - {name: fallback, models: [cheap]}\n"+
		"      - {name: tool_limit, tool: mail, thread_limit: 1, end_run: true, end_message: Done.}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	mw := f.Assistants[0].Middleware
	if p := mw[4].RetryPolicy(); p.MaxAttempts != 4 || p.InitialBackoff != time.Second || p.MaxBackoff != 10*time.Second {
		t.Errorf("retry policy = %+v", p)
	}
	if len(mw) != 7 || mw[3].Template == "" || mw[5].Models[0] != "cheap" || !mw[6].EndRun || mw[6].EndMessage != "Done." || mw[0].Strategy != "hash" || mw[0].Patterns["ticket"] != "TCK-[0-9]+" || mw[1].RunLimit != 2 || mw[2].Model != "cheap" {
		t.Errorf("middleware = %+v", mw)
	}
	// Apps take middleware too: their agents run through it.
	if _, err := Parse([]byte("assistants:\n  - {graph: planner, name: n, middleware: [{name: pii}]}\n"), env(nil)); err != nil {
		t.Errorf("an app assistant's middleware: %v", err)
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
		{agent("{name: dynamic_prompt}"), "assistants[0].middleware[0]: .template: dynamic prompt: the template is empty"},
		{agent("{name: dynamic_prompt, template: '{{context'}"), ".template: dynamic prompt: the template does not parse"},
		{agent("{name: retry, max_attempts: 50}"), ".max_attempts: 50 is not between 1 and 10"},
		{agent("{name: retry, initial_backoff: soon}"), `.initial_backoff: "soon" is not a duration`},
		{agent("{name: retry, max_backoff: 3h}"), `.max_backoff: "3h" is not a duration like 500ms or 30s, at most 5m0s`},
		{agent("{name: fallback}"), ".models: fallback needs models"},
		{agent("{name: fallback, models: [\"openai:gpt-4o\"]}"), `.models[0]: "openai:gpt-4o" is not a name under models; fallback models come only from the operator's models`},
		{agent("{name: fallback, models: [nosuch]}"), `assistants[0].middleware[0].models[0]: "nosuch" is not a name under models`},
		{agent("{name: tool_limit, run_limit: 1, end_message: bye}"), ".end_message: end_message is the final reply of a run end_run ends"},
		{agent("{name: pii, template: x}"), ".template: pii does not take template"},
	} {
		_, err := Parse([]byte(c.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.src, err, c.want)
		}
	}
}
