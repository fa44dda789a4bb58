package config

import (
	"strings"
	"testing"
)

func TestHistorySection(t *testing.T) {
	f, err := Parse([]byte("models: {cheap: \"openai:gpt-4o-mini\"}\nassistants:\n  - graph: agent\n    name: n\n    history: {policy: summarize, turns: 3, max_turns: 9, model: cheap, prompt: be brief}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := History{Policy: HistorySummarize, Turns: 3, MaxTurns: 9, Model: "cheap", Prompt: "be brief"}
	if got := f.Assistants[0].History; got == nil || *got != want {
		t.Errorf("history = %+v; want %+v", got, want)
	}
	agent := func(h string) string { return "assistants:\n  - graph: agent\n    name: n\n    history: " + h + "\n" }
	for _, c := range []struct{ src, want string }{
		{agent("{policy: forget}"), `assistants[0]: history.policy: "forget" is not last_turns, token_budget or summarize`},
		{agent("{policy: last_turns}"), "assistants[0]: history.turns: last_turns needs turns of at least 1"},
		{agent("{policy: token_budget}"), "history.max_tokens: token_budget needs max_tokens of at least 1"},
		{agent("{policy: summarize, turns: 5, max_turns: 2}"), "history.max_turns: summarize needs turns >= 1"},
		{agent("{turns: 5}"), "history.policy: set a policy"},
		{agent("{policy: summarize, model: nosuch}"), `assistants[0].history.model: "nosuch" is neither a name under models`},
		{agent("{policy: last_turns, turn: 2}"), `unknown field "turn"`},
		{"assistants:\n  - {graph: planner, name: n, history: {policy: last_turns, turns: 2}}\n", `assistants[0].history: only assistants of graph "agent" take a history policy`},
	} {
		_, err := Parse([]byte(c.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.src, err, c.want)
		}
	}
}

func TestStoreSection(t *testing.T) {
	f, err := Parse([]byte("store:\n  index: {embed: \"openai:text-embedding-3-small\", dims: 1536, fields: [text, \"tags[*]\"]}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if ix := f.Store.Index; ix == nil || ix.Embed != "openai:text-embedding-3-small" || ix.Dims != 1536 || len(ix.Fields) != 2 {
		t.Errorf("store.index = %+v", ix)
	}
	for _, c := range []struct{ src, want string }{
		{"store:\n  index: {dims: 8}\n", "store.index.embed: required"},
		{"store:\n  index: {embed: nosuch, dims: 8}\n", `store.index.embed: "nosuch" is neither a name under models`},
		{"store:\n  index: {embed: \"openai:e\"}\n", "store.index.dims: required"},
		{"store:\n  index: {embed: \"openai:e\", dims: 8, fields: [\"a[\"]}\n", "store.index.fields[0]:"},
	} {
		_, err := Parse([]byte(c.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.src, err, c.want)
		}
	}
}
