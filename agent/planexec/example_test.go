package planexec_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// A task planned in three steps, two of them in parallel, confirmed by a
// person before it runs. The scripted model plays every part.
func Example() {
	model := llmtest.New()
	model.When(llmtest.Node(planexec.IntentNode), llmtest.JSON(map[string]string{"intent": "task"}))
	model.When(llmtest.Node(planexec.PlanNode), llmtest.JSON(map[string]any{
		"complexity": "simple",
		"task":       "Say which of Oslo and Rome is warmer today",
		"steps": []planexec.Step{
			{ID: "oslo", Title: "Oslo weather", Description: "Get the weather in Oslo."},
			{ID: "rome", Title: "Rome weather", Description: "Get the weather in Rome."},
			{ID: "compare", Title: "Compare", Description: "Say which city is warmer.", DependsOn: []string{"oslo", "rome"}},
		},
	}))
	model.When(llmtest.LastUserContains("Your step is oslo:"),
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)), llmtest.Text("Oslo: 8°C, rain"))
	model.When(llmtest.LastUserContains("Your step is rome:"),
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Rome"}`)), llmtest.Text("Rome: 21°C, sun"))
	model.When(llmtest.LastUserContains("Your step is compare:"), llmtest.Text("Rome is warmer."))
	model.When(llmtest.Node(planexec.DeliverNode), llmtest.Text("Rome is warmer today: 21°C against 8°C in Oslo."))

	weather := tool.MustFunc("weather", "Today's weather in a city.",
		func(_ context.Context, a struct {
			City string `json:"city"`
		}) (string, error) {
			return map[string]string{"Oslo": "8°C, rain", "Rome": "21°C, sun"}[a.City], nil
		}, tool.ReadOnly())

	g, err := planexec.New(planexec.Config{
		Model:       model,
		Tools:       []tool.Tool{weather},
		PlanMode:    true,
		ConfirmPlan: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("example")}

	res, _ := g.Invoke(context.Background(), planexec.Input("Is Oslo or Rome warmer today?"), opts...)
	review, _ := planexec.ReviewFrom(res.Interrupts[0])
	var titles []string
	for _, s := range review.Plan.Steps {
		titles = append(titles, s.Title)
	}
	fmt.Println(res.Status, "-", strings.Join(titles, ", "))

	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.ApprovePlan()))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	steps := planexec.Steps.Get(res.State)
	for _, id := range []string{"oslo", "rome", "compare"} {
		fmt.Printf("%s: %s (%s)\n", id, steps[id].Result, steps[id].Status)
	}
	answer, _ := planexec.Answer(res.State)
	fmt.Println(res.Status, "-", answer)
	// Output:
	// interrupted - Oslo weather, Rome weather, Compare
	// oslo: Oslo: 8°C, rain (done)
	// rome: Rome: 21°C, sun (done)
	// compare: Rome is warmer. (done)
	// completed - Rome is warmer today: 21°C against 8°C in Oslo.
}

// Reading the agent's progress from a stream: plan, steps, delivery.
func ExampleEventFrom() {
	model := llmtest.New()
	model.When(llmtest.Node(planexec.PlanNode), llmtest.JSON(map[string]any{
		"complexity": "simple", "task": "Greet",
		"steps": []planexec.Step{{ID: "hello", Title: "Say hello", Description: "Greet the user."}},
	}))
	model.When(llmtest.Node("model"), llmtest.Text("Hello!"))
	model.When(llmtest.Node(planexec.DeliverNode), llmtest.Text("I said hello."))
	g, _ := planexec.New(planexec.Config{Model: model, PlanMode: true, TaskOnly: true})

	for ev, err := range g.Stream(context.Background(), planexec.Input("greet me"), graph.WithEvents(graph.EventCustom)) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if e, ok := planexec.EventFrom(ev); ok {
			fmt.Println(strings.TrimSpace(strings.Join([]string{string(e.Kind), e.StepID, e.Result + e.Text}, " ")))
		}
	}
	// Output:
	// plan_ready
	// step_started hello
	// step_finished hello Hello!
	// delivered  I said hello.
}

// Configuring the phases, the budgets and the checks: a stronger model
// plans, a small one judges each step's done_when, steps may make at most
// 20 requests, and a step that misses its goal is sent back to work once.
func ExampleConfig_phases() {
	fast := llmtest.New(llmtest.WithName("demo:fast"))
	fast.When(llmtest.Node(planexec.IntentNode), llmtest.JSON(map[string]string{"intent": "task"}))
	fast.When(llmtest.LastUserContains("Your step is price:"), llmtest.Text("The venue is lovely."), llmtest.Text("The venue costs €900 a day."))
	fast.When(llmtest.Node(planexec.DeliverNode), llmtest.Text("The venue costs €900 a day."))
	strong := llmtest.New(llmtest.WithName("demo:strong"))
	strong.When(llmtest.Node(planexec.PlanNode), llmtest.JSON(map[string]any{
		"complexity": "simple", "task": "Find the venue's price",
		"steps": []planexec.Step{{ID: "price", Title: "Find the price", DoneWhen: "a price in euros is given"}},
	}))
	judge := llmtest.New(llmtest.WithName("demo:judge"))
	judge.When(llmtest.Any(),
		llmtest.JSON(map[string]any{"done": false, "missing": "the price in euros"}),
		llmtest.JSON(map[string]any{"done": true}))

	low := 0.0
	g, err := planexec.New(planexec.Config{
		Model:    fast,
		PlanMode: true,
		Phases: planexec.Phases{
			Plan:  llm.Settings{Model: strong, ReasoningEffort: "high"},
			Judge: llm.Settings{Model: judge, Temperature: &low},
		},
		StepRounds: 20,
		CheckSteps: true,
		Prompts:    planexec.Prompts{Deliver: "Answer in one sentence. The task: {{.Task}}."},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := g.Invoke(context.Background(), planexec.Input("How much is the venue?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := planexec.Steps.Get(res.State)["price"]
	fmt.Printf("%s after %d retry: %s\n", r.Status, r.Retries, r.Result)
	answer, _ := planexec.Answer(res.State)
	fmt.Println(answer)
	// Output:
	// done after 1 retry: The venue costs €900 a day.
	// The venue costs €900 a day.
}
