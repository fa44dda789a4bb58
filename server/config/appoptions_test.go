package config

import (
	"strings"
	"testing"
)

// A planner assistant's options are checked when the file is read: bad
// fields, values, phase models and prompt templates name their field;
// good ones pass.
func TestPlannerOptionsChecked(t *testing.T) {
	good := `models: {default: "openai:gpt-4o-mini", strong: "anthropic:claude-sonnet-4-5"}
assistants:
  - graph: planner
    name: p
    config:
      configurable:
        planner:
          step_rounds: 40
          time_budget: 10m
          check_steps: true
          phases: {plan: {model: strong, temperature: 0.2}, judge: {model: "openai:gpt-4o-mini"}}
          prompts: {deliver: "Sum up {{len .Steps}} steps."}
`
	if _, err := Parse([]byte(good), env(nil)); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for _, c := range []struct{ planner, want string }{
		{"{max_question: 2}", `assistants[0].config.configurable.planner: planexec options: json: unknown field "max_question"`},
		{"{phases: {plan: {model: huge}}}", `phases.plan.model: "huge" is neither a name under models nor a spec`},
		{"{phases: {execute: {temperature: 9}}}", "phases.execute.Temperature is 9"},
		{"{time_budget: soon}", `time_budget: "soon" is not a positive duration`},
		{`{prompts: {plan: "{{.Nope}}"}}`, "Config.Prompts.Plan fails on sample data"},
	} {
		src := "assistants:\n  - graph: planner\n    name: p\n    config: {configurable: {planner: " + c.planner + "}}\n"
		_, err := Parse([]byte(src), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.planner, err, c.want)
		}
	}
}
