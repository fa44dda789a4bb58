package config

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/llm"
)

// PlannerGraph is the graph ID of the planner app, whose assistants take
// options under config.configurable.planner (planexec.Options).
const PlannerGraph = "planner"

// checkAppOptions checks the options an app assistant's config carries,
// as far as the file can tell: their fields and values, the templates of
// the prompts, and that the models the phases name are names under models
// or specs. It returns the field (under the assistant) and the problem.
func (a Assistant) checkAppOptions(models map[string]string) (string, error) {
	if a.Graph != PlannerGraph {
		return "", nil
	}
	conf, _ := a.Config["configurable"].(map[string]any)
	raw, ok := conf[PlannerGraph]
	if !ok {
		return "", nil
	}
	field := "config.configurable." + PlannerGraph
	b, err := json.Marshal(raw)
	if err != nil {
		return field, err
	}
	o, err := planexec.DecodeOptions(b)
	if err != nil {
		return field, err
	}
	cfg := planexec.Config{Model: stubModel{}, PlanMode: true, AskMode: true}
	resolve := func(name string) (llm.Model, error) {
		if _, ok := models[name]; ok || strings.Contains(name, ":") {
			return stubModel{}, nil
		}
		return nil, fmt.Errorf("%q is neither a name under models nor a spec like openai:gpt-4o-mini", name)
	}
	if err := o.Apply(&cfg, resolve); err != nil {
		return field, err
	}
	if _, err := planexec.New(cfg); err != nil {
		return field, err
	}
	return "", nil
}

// stubModel stands for a model while options are checked; it is never
// asked anything.
type stubModel struct{}

func (stubModel) Name() string { return "config:check" }

func (stubModel) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, fmt.Errorf("config: the check's stand-in model cannot answer")
}

func (stubModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		yield(llm.Chunk{}, fmt.Errorf("config: the check's stand-in model cannot answer"))
	}
}
