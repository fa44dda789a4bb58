package react_test

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// An agent with one read tool. The scripted model asks for the weather in
// two cities at once, then answers.
func Example() {
	model := llmtest.New().Reply(
		llmtest.ToolCalls(
			llmtest.Call("weather", `{"city":"Oslo"}`),
			llmtest.Call("weather", `{"city":"Rome"}`),
		),
		llmtest.Text("Oslo is rainy and Rome is sunny."),
	)
	weather := tool.MustFunc("weather", "Current weather in a city.",
		func(_ context.Context, a struct {
			City string `json:"city"`
		}) (string, error) {
			if a.City == "Oslo" {
				return "rain", nil
			}
			return "sun", nil
		}, tool.ReadOnly())

	g, err := react.New(react.Config{
		Model:  model,
		System: "You answer questions about the weather.",
		Tools:  []tool.Tool{weather},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := g.Invoke(context.Background(), react.Input("Weather in Oslo and Rome?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, _ := react.Answer(res.State)
	fmt.Println(answer)
	for _, id := range []string{"call_1", "call_2"} {
		rec, _ := tool.LookupCall(res.State, react.Calls, id)
		fmt.Printf("%s %s -> %s\n", rec.Tool, rec.Arguments, rec.Result)
	}
	fmt.Println("steps:", res.Steps, "requests:", res.Usage().Requests)
	// Output:
	// Oslo is rainy and Rome is sunny.
	// weather {"city":"Oslo"} -> rain
	// weather {"city":"Rome"} -> sun
	// steps: 3 requests: 2
}

// A structured final answer, stored in a typed key.
func ExampleOutputTo() {
	type Forecast struct {
		City string `json:"city"`
		Sky  string `json:"sky"`
	}
	forecast := graph.NewKey[Forecast]("forecast")

	model := llmtest.New()
	model.When(llmtest.Node(react.ModelNode), llmtest.Text("Oslo will be cloudy."))
	model.When(llmtest.Node(react.AnswerNode),
		llmtest.Text("Cloudy!"), // not JSON: corrected inside the answer step
		llmtest.JSON(Forecast{City: "Oslo", Sky: "cloudy"}))

	g, err := react.New(react.Config{Model: model, Output: react.OutputTo(forecast)})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := g.Invoke(context.Background(), react.Input("Forecast for Oslo?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", forecast.Get(res.State))
	answer, _ := react.Answer(res.State)
	fmt.Println(answer)
	// Output:
	// {City:Oslo Sky:cloudy}
	// Oslo will be cloudy.
}

// Tool approval: the run stops at a write tool's call and resumes with the
// person's decision. The saved answer ends with what did not happen, in
// the agent's records' words, whatever the model wrote.
func ExampleConfig_approval() {
	model := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("delete_file", `{"path":"notes.txt"}`)),
		llmtest.Text("I did not delete it, as you asked."),
	)
	del := tool.MustFunc("delete_file", "Delete a file.",
		func(_ context.Context, a struct {
			Path string `json:"path"`
		}) (string, error) {
			return "deleted " + a.Path, nil
		})
	g, _ := react.New(react.Config{Model: model, Tools: []tool.Tool{del}})
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("example")}

	res, _ := g.Invoke(context.Background(), react.Input("Delete notes.txt"), opts...)
	req, _ := tool.ApprovalFrom(res.Interrupts[0])
	fmt.Println(res.Status, req.Tool, string(req.Arguments))

	res, _ = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Reject("keep it")))...)
	answer, _ := react.Answer(res.State)
	fmt.Println(res.Status, answer)
	// Output:
	// interrupted delete_file {"path":"notes.txt"}
	// completed I did not delete it, as you asked.
	//
	// Not done: delete_file was rejected by you: "keep it".
}
