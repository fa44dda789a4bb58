package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool"
)

// The trip graph: a planexec agent with a scripted model whose plan a
// person edits, and two write tools the plan's last step calls at once.
// Unlike the planner app it does not replan, so the plan that runs is the
// one the person sent; a step the person adds gets a generic reply.
const (
	tripCity      = "Porto"
	tripQuestion  = "Which city should the trip go to?"
	tripAnswer    = "Your trip is set: Hotel Azul is booked."
	tripReasoning = "Every step is done; I sum up what the tools did, nothing more."
	stepHotels    = "hotels"
	stepBook      = "book"
	toolFind      = "find_hotels"
	toolBook      = "book_hotel"
	toolInvite    = "send_invites"
)

// bookSchema is book_hotel's argument schema, written out so it carries
// an enum and limits for the page to check an edit against.
const bookSchema = `{"type":"object","properties":{
	"hotel":{"type":"string","enum":["Hotel Azul","Casa Ribeira"],"description":"the hotel"},
	"nights":{"type":"integer","minimum":1,"maximum":14,"description":"how many nights"},
	"guests":{"type":"integer","minimum":1,"description":"how many people"}},
	"required":["hotel","nights","guests"],"additionalProperties":false}`

type bookArgs struct {
	Hotel  string `json:"hotel"`
	Nights int    `json:"nights"`
	Guests int    `json:"guests"`
}

// bookTool books a hotel; the tool node checks its arguments against
// bookSchema before it runs.
type bookTool struct{ r *ran }

func (bookTool) Info() tool.Info {
	return tool.Info{Name: toolBook, Description: "Book a hotel.", Parameters: json.RawMessage(bookSchema)}
}

func (t bookTool) Call(_ context.Context, raw json.RawMessage) (string, error) {
	var a bookArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	t.r.add(toolBook, a)
	return fmt.Sprintf("Booked %s for %d nights, %d guests.", a.Hotel, a.Nights, a.Guests), nil
}

// inviteArgs nest an object, so the page edits them as JSON.
type inviteArgs struct {
	To struct {
		Group string `json:"group" jsonschema:"the group invited"`
	} `json:"to" jsonschema:"who is invited"`
	Message string `json:"message" jsonschema:"the invitation"`
}

// ran records the calls the trip's tools ran (not the ones rejected):
// what the server did, for the test to check against the page.
type ran struct {
	mu    sync.Mutex
	calls []string // "name args-json"
}

func (r *ran) add(name string, args any) {
	b, _ := json.Marshal(args)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name+" "+string(b))
}

func (r *ran) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func tripTools(r *ran) []tool.Tool {
	return []tool.Tool{
		tool.MustFunc(toolFind, "Find hotels in a city.", func(_ context.Context, a struct {
			City string `json:"city"`
		}) (string, error) {
			r.add(toolFind, a)
			return "Hotel Azul (€90 a night) and Casa Ribeira (€120 a night).", nil
		}, tool.ReadOnly()),
		bookTool{r},
		tool.MustFunc(toolInvite, "Send the trip's invitation.", func(_ context.Context, a inviteArgs) (string, error) {
			r.add(toolInvite, a)
			return "Sent.", nil
		}),
	}
}

// inStep matches the requests of the loop running step id (any step for
// ""): its first user message names the step.
func inStep(id string) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		if r.Node != react.ModelNode || !strings.HasPrefix(r.Namespace, planexec.StepNode+":") {
			return false
		}
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleUser {
				return strings.Contains(msg.Text(), "Your step is "+id)
			}
		}
		return false
	}
}

// plannerAnswered matches the planner's requests after n answers.
func plannerAnswered(n int) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		if r.Node != planexec.PlanNode {
			return false
		}
		got := 0
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleTool {
				got++
			}
		}
		return got == n
	}
}

func jsonArgs(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // fixed maps of the script
	}
	return string(b)
}

func tripScript() llm.Model {
	m := llmtest.New()
	ask := func(v any) llmtest.Turn {
		return llmtest.ToolCalls(llmtest.Call(planexec.AskToolName, jsonArgs(v)))
	}
	m.When(llmtest.Node(planexec.IntentNode), llmtest.JSON(map[string]string{"intent": "task"})).Repeat()
	m.When(plannerAnswered(0), ask(map[string]any{"mode": planexec.AskSelect, "question": tripQuestion, "options": []string{"Lisbon", tripCity}})).Repeat()
	lo, hi := 1.0, 40.0
	m.When(plannerAnswered(1), ask(map[string]any{"mode": planexec.AskForm, "question": "About the group", "fields": []planexec.Field{
		{Key: "people", Label: "Number of people", Type: planexec.FieldNumber, Required: true, Min: &lo, Max: &hi},
		{Key: "length", Label: "Length", Type: planexec.FieldSelect, Required: true, Options: []string{"2 nights", "3 nights"}},
	}})).Repeat()
	m.When(plannerAnswered(2), llmtest.JSON(map[string]any{"complexity": "moderate", "task": "Book a team trip to Porto for 12 people.", "steps": []planexec.Step{
		{ID: stepHotels, Title: "Find hotels", Description: "Find hotels in Porto for 12 people.", DoneWhen: "two hotels are listed"},
		{ID: stepBook, Title: "Book the hotel", Description: "Book the cheaper hotel and invite the team.", DependsOn: []string{stepHotels}},
	}})).Repeat()
	m.When(llmtest.And(inStep(stepHotels+":"), llmtest.Not(llmtest.LastIsToolResult())),
		llmtest.ToolCalls(llmtest.Call(toolFind, `{"city":"Porto"}`))).Repeat()
	m.When(llmtest.And(inStep(stepBook+":"), llmtest.Not(llmtest.LastIsToolResult())), llmtest.ToolCalls(
		llmtest.Call(toolBook, `{"hotel":"Hotel Azul","nights":2,"guests":12}`),
		llmtest.Call(toolInvite, `{"to":{"group":"the team"},"message":"Porto, here we come"}`),
	)).Repeat()
	m.When(inStep(""), llmtest.Text("The step is done.")).Repeat()
	m.When(llmtest.Node(planexec.DeliverNode), llmtest.Reasoning(tripReasoning, tripAnswer)).Repeat()
	return m
}

func tripGraph(r *ran) runs.GraphSpec {
	return runs.GraphSpec{Description: "a trip planner whose plan is edited in the page", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		return planexec.New(planexec.Config{Name: "trip", Model: tripScript(), Tools: tripTools(r), PlanMode: true, AskMode: true, ConfirmPlan: true, RoundBudget: 40})
	}}
}

// The thinker graph: a ReAct agent that reasons, calls two tools at once
// (one fails), then reasons again and answers.
const (
	thinkFirst  = "I should look up the weather and the forecast."
	thinkSecond = "The weather came back; the forecast failed."
	thinkAnswer = "It is sunny in Oslo."
	thinkFailed = "the forecast service is down"
	// thinkSaved is the answer as saved and shown: the model's text, then
	// the agent's line on the call that did not happen.
	thinkSaved = thinkAnswer + "\nNot done: forecast failed: " + thinkFailed + "."
)

func thinkerGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "reasons between tool calls", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		m := llmtest.New()
		m.When(llmtest.Not(llmtest.LastIsToolResult()), llmtest.Reasoning(thinkFirst, "").WithCalls(
			llmtest.Call("weather", `{"city":"Oslo"}`), llmtest.Call("forecast", `{"city":"Oslo"}`))).Repeat()
		m.When(llmtest.LastIsToolResult(), llmtest.Reasoning(thinkSecond, thinkAnswer)).Repeat()
		type city struct {
			City string `json:"city"`
		}
		return react.New(react.Config{Name: "thinker", Model: m, Tools: []tool.Tool{
			tool.MustFunc("weather", "The weather now.", func(_ context.Context, a city) (string, error) { return "Sunny, 21 °C in " + a.City, nil }, tool.ReadOnly()),
			tool.MustFunc("forecast", "The forecast.", func(context.Context, city) (string, error) { return "", errors.New(thinkFailed) }, tool.ReadOnly()),
		}})
	}}
}

const failingError = "the booking system is down"

// failingGraph fails its only node.
func failingGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "fails", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("work", func(context.Context, graph.State) (graph.Output, error) { return nil, errors.New(failingError) })
		b.SetEntry("work")
		b.AddEdge("work", graph.END)
		return b.Compile()
	}}
}
