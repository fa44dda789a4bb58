package history_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// A Spec builds the policy it names, resolving the summariser by name or
// falling back on the agent's model, and reports each bad field by where.
func TestSpecBuild(t *testing.T) {
	agent, cheap := llmtest.New(llmtest.WithName("test:agent")), llmtest.New(llmtest.WithName("test:cheap"))
	resolve := func(name string) (llm.Model, error) {
		if name == "cheap" {
			return cheap, nil
		}
		return nil, errors.New("no such model")
	}
	var none *history.Spec
	if p, err := none.Build("x", agent, resolve); p != nil || err != nil {
		t.Errorf("a nil spec: %v, %v", p, err)
	}
	good := []struct {
		spec history.Spec
		want history.Policy
	}{
		{history.Spec{Policy: "last_turns", Turns: 3}, history.LastTurns{N: 3}},
		{history.Spec{Policy: "token_budget", MaxTokens: 900}, history.Budget{Max: 900}},
		{history.Spec{Policy: "summarize", Turns: 2, MaxTurns: 5, Prompt: "be brief"}, history.Summarize{Model: agent, Prompt: "be brief", KeepTurns: 2, MaxTurns: 5}},
		{history.Spec{Policy: "summarize", Model: "cheap"}, history.Summarize{Model: cheap}},
	}
	for _, g := range good {
		p, err := g.spec.Build("x", agent, resolve)
		if err != nil || !reflect.DeepEqual(p, g.want) {
			t.Errorf("%+v: %#v, %v; want %#v", g.spec, p, err, g.want)
		}
	}
	bad := []struct {
		spec history.Spec
		want string
	}{
		{history.Spec{Policy: "everything"}, `x.policy: "everything" is not`},
		{history.Spec{Policy: "last_turns"}, "x: history: LastTurns.N is 0"},
		{history.Spec{Policy: "token_budget"}, "x: history: Budget.Max is 0"},
		{history.Spec{Policy: "summarize", Model: "huge"}, "x.model: no such model"},
		{history.Spec{Policy: "summarize", Turns: 4, MaxTurns: 2}, "MaxTurns at least KeepTurns"},
	}
	for _, b := range bad {
		if _, err := b.spec.Build("x", agent, resolve); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: %v; want %q", b.spec, err, b.want)
		}
	}
	if _, err := (&history.Spec{Policy: "summarize", Model: "cheap"}).Build("x", agent, nil); err == nil || !strings.Contains(err.Error(), "no model resolver") {
		t.Errorf("a model name without a resolver: %v", err)
	}
}
