package guide_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
	"github.com/trellis-agents/trellis/tool/mcp"
)

// WeatherArgs are the weather tool's parameters: the schema the model sees
// is inferred from the struct (json names, omitempty = optional,
// jsonschema = description).
type WeatherArgs struct {
	City string `json:"city" jsonschema:"the city to look up"`
	Unit string `json:"unit,omitempty" jsonschema:"C or F, default C"`
}

// Example_tools gives a ReAct agent a typed function tool and runs it on a
// scripted model that calls the tool, then answers (page
// 06-tools-and-mcp.md).
func Example_tools() {
	weather := tool.MustFunc("weather", "Current weather in a city.",
		func(ctx context.Context, a WeatherArgs) (string, error) {
			return "14°C and windy in " + a.City, nil
		}, tool.ReadOnly()) // a read tool runs without asking a person

	model := llmtest.New()
	model.Reply(
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)),
		llmtest.Text("It is 14°C and windy in Oslo."),
	)
	agent, err := react.New(react.Config{Model: model, System: "You report the weather.", Tools: []tool.Tool{weather}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Invoke(context.Background(), react.Input("Weather in Oslo?"))
	if err != nil {
		log.Fatal(err)
	}
	answer, _ := react.Answer(res.State)
	fmt.Println(answer)
	for _, rec := range react.Calls.Get(res.State) {
		fmt.Printf("%s(%s) -> %s\n", rec.Tool, rec.Arguments, rec.Result)
	}
	// The model saw the tool's schema, inferred from WeatherArgs.
	spec := model.Requests()[0].Tools[0]
	fmt.Println(spec.Name, string(spec.Parameters))
	// Output:
	// It is 14°C and windy in Oslo.
	// weather({"city":"Oslo"}) -> 14°C and windy in Oslo
	// weather {"type":"object","properties":{"city":{"type":"string","description":"the city to look up"},"unit":{"type":"string","description":"C or F, default C"}},"required":["city"],"additionalProperties":false}
}

// Example_mcp serves one tool from an MCP server (here in the same
// process, over the SDK's in-memory transport) and uses it as a Trellis
// tool.
func Example_mcp() {
	ctx := context.Background()
	server := sdk.NewServer(&sdk.Implementation{Name: "clock", Version: "1"}, nil)
	server.AddTool(&sdk.Tool{
		Name:        "now",
		Description: "The current time in a zone.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"]}`),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args struct{ Zone string }
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "12:00 in " + args.Zone}}}, nil
	})

	// A real server is mcp.Stdio{Command: ...} or mcp.HTTP{URL: ...}.
	transport := mcp.TransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		client, srv := sdk.NewInMemoryTransports()
		if _, err := server.Connect(ctx, srv, nil); err != nil {
			return nil, err
		}
		return client, nil
	})
	c, err := mcp.Connect(ctx, transport, mcp.WithToolPrefix("clock_"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	tools, err := c.Tools(ctx) // []tool.Tool: give them to react.Config.Tools
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools {
		info := t.Info()
		fmt.Println(info.Name, "read-only:", info.ReadOnly)
		out, err := t.Call(ctx, json.RawMessage(`{"zone":"UTC"}`))
		fmt.Println(out, err)
	}
	// Output:
	// clock_now read-only: true
	// 12:00 in UTC <nil>
}
