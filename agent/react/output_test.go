package react_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

type report struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
}

var reportKey = graph.NewKey[report]("report")

func outputAgent(t *testing.T, m llm.Model, r *ran) *graph.Graph {
	return mustNew(t, react.Config{
		Model:  m,
		System: "sys",
		Tools:  []tool.Tool{weather(r), tool.Stop()},
		Output: react.OutputTo(reportKey),
	})
}

func TestStructuredAnswer(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Node(react.ModelNode),
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)),
		llmtest.Text("Oslo: sunny, 21 °C."))
	m.When(llmtest.Node(react.AnswerNode), llmtest.JSON(report{City: "Oslo", TempC: 21}))
	var r ran
	res, err := outputAgent(t, m, &r).Invoke(context.Background(), react.Input("Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	if got := reportKey.Get(res.State); got != (report{City: "Oslo", TempC: 21}) {
		t.Errorf("report = %+v", got)
	}
	if got, _ := react.Answer(res.State); got != "Oslo: sunny, 21 °C." {
		t.Errorf("the history's last message changed: %q", got)
	}
	if n := len(react.Messages.Get(res.State)); n != 4 {
		t.Errorf("history has %d messages; want 4 (the answer step adds none)", n)
	}
	if last := res.Path[len(res.Path)-1]; last.Node != react.AnswerNode {
		t.Errorf("last node = %s", last.Node)
	}
	req := m.LastRequest()
	if req.Node != react.AnswerNode || req.ResponseFormat == nil || len(req.ResponseFormat.Schema) == 0 {
		t.Fatalf("answer request %+v has no response format", req)
	}
	if req.ToolChoice.Mode != llm.ToolChoiceNone || req.System() != "sys" {
		t.Errorf("answer request: tool choice %q, system %q", req.ToolChoice.Mode, req.System())
	}
	if u := req.LastUser(); !strings.HasPrefix(u, react.DefaultOutputPrompt) || !strings.Contains(u, `"temp_c"`) {
		t.Errorf("answer instruction = %q; want the prompt and the schema", u)
	}
}

func TestStructuredAnswerCorrected(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Node(react.ModelNode), llmtest.Text("Sunny."))
	m.When(llmtest.Node(react.AnswerNode), llmtest.Text("sunny, I think"), llmtest.JSON(report{City: "Oslo", TempC: 20}))
	var r ran
	res, err := outputAgent(t, m, &r).Invoke(context.Background(), react.Input("Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	if got := reportKey.Get(res.State); got.TempC != 20 {
		t.Errorf("report = %+v", got)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests; want model, bad answer, good answer", len(reqs))
	}
	// The correction went back to the model inside the answer step...
	second := roles(reqs[2].Messages)
	if second[len(second)-2] != "assistant:sunny, I think" || !strings.Contains(second[len(second)-1], "could not be used") {
		t.Errorf("the correction request ends with %v", second[len(second)-2:])
	}
	// ...and none of it is kept in the history.
	if d := cmp.Diff([]string{"user:Oslo?", "assistant:Sunny."}, roles(react.Messages.Get(res.State))); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if res.Usage().Requests != 3 {
		t.Errorf("usage counts %d requests; want 3", res.Usage().Requests)
	}
}

func TestStructuredAnswerContractError(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Node(react.ModelNode), llmtest.Text("Sunny."))
	m.When(llmtest.Node(react.AnswerNode), llmtest.Text("no"), llmtest.Text("still no"), llmtest.Text(`{"city": 3}`))
	var r ran
	res, err := outputAgent(t, m, &r).Invoke(context.Background(), react.Input("Oslo?"))
	var ce *llm.ContractError
	if !errors.As(err, &ce) || !errors.Is(err, llm.ErrContract) || ce.Attempts != 3 {
		t.Fatalf("err = %v; want a ContractError after 3 attempts", err)
	}
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != react.AnswerNode || res.Status != graph.StatusFailed {
		t.Errorf("err = %v, status %s; want the answer node to fail the run", err, res.Status)
	}
	if _, ok := reportKey.Lookup(res.State); ok {
		t.Error("a report was stored")
	}
}

func TestStructuredAnswerAfterStopTool(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Node(react.ModelNode), llmtest.ToolCalls(llmtest.Call("stop", `{"answer":"Oslo is sunny"}`)))
	m.When(llmtest.Node(react.AnswerNode), llmtest.JSON(report{City: "Oslo", TempC: 19}))
	var r ran
	res, err := outputAgent(t, m, &r).Invoke(context.Background(), react.Input("Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	if reportKey.Get(res.State).TempC != 19 || len(m.Requests()) != 2 {
		t.Errorf("report %+v after %d requests", reportKey.Get(res.State), len(m.Requests()))
	}
}

// The step budget reserves the answer step; with no step left at all, the
// model node gives the structured answer itself.
func TestStructuredAnswerUnderStepLimit(t *testing.T) {
	for _, tc := range []struct {
		limit, rounds int
		nodes         []string
	}{
		{1, 0, []string{react.ModelNode}},
		{2, 0, []string{react.ModelNode, react.AnswerNode}},
		{3, 0, []string{react.ModelNode, react.AnswerNode}},
		{4, 1, []string{react.ModelNode, react.ToolsNode, react.ModelNode, react.AnswerNode}},
	} {
		// JSON requests (from the answer node, or from the model node
		// when no step is left for it) get the report; the rest loop.
		m := llmtest.New()
		m.When(func(r *llmtest.Request) bool { return r.ResponseFormat != nil }, llmtest.JSON(report{City: "Oslo", TempC: 18}))
		m.When(func(r *llmtest.Request) bool { return r.ToolChoice.Mode == llm.ToolChoiceNone }, llmtest.Text("Sunny."))
		m.When(nil, llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`))).Repeat()
		var r ran
		res, err := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, Output: react.OutputTo(reportKey)}).
			Invoke(context.Background(), react.Input("Oslo?"), graph.WithStepLimit(tc.limit))
		if err != nil {
			t.Fatalf("limit %d: %v", tc.limit, err)
		}
		var nodes []string
		for _, p := range res.Path {
			nodes = append(nodes, p.Node)
		}
		if d := cmp.Diff(tc.nodes, nodes); d != "" {
			t.Errorf("limit %d: path (-want +got):\n%s", tc.limit, d)
		}
		if reportKey.Get(res.State).TempC != 18 || r.get("weather:Oslo") != tc.rounds {
			t.Errorf("limit %d: report %+v, %d rounds", tc.limit, reportKey.Get(res.State), r.get("weather:Oslo"))
		}
		answer, ok := react.Answer(res.State)
		if want := len(tc.nodes) == 1; !ok || want != strings.HasPrefix(answer, "{") {
			t.Errorf("limit %d: the history ends with %q, %v; want the JSON reply only when the model node gave it", tc.limit, answer, ok)
		}
	}
}
