package react_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// A write tool stops the run for approval; the answer decides whether it
// runs, and the model sees the outcome.
func TestWriteToolApproval(t *testing.T) {
	cases := []struct {
		name     string
		decision tool.Decision
		runs     int
		result   string // the tool message the model sees
		isError  bool
		outcome  tool.Outcome
		answer   string // the saved answer: the model's "Done." grounded in what happened
	}{
		{"approve", tool.Approve(), 1, "sent to ann@example.com", false, tool.OutcomeApproved, "Done."},
		{"reject", tool.Reject("not to her"), 0, "A person rejected this call, so it was not run. Their message: not to her", true, tool.OutcomeRejected,
			"Done.\n\nNot done: send_email was rejected by you: \"not to her\"."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.New().Reply(
				llmtest.ToolCalls(
					llmtest.Call("weather", `{"city":"Oslo"}`),
					llmtest.Call("send_email", `{"to":"ann@example.com","body":"sunny"}`),
				),
				llmtest.Text("Done."),
			)
			var r ran
			g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r), sendEmail(&r)}})
			opts := threadOpts("t1")

			res, err := g.Invoke(context.Background(), react.Input("Tell Ann the weather."), opts...)
			if !errors.Is(err, graph.ErrInterrupted) || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 {
				t.Fatalf("err = %v, status %s, interrupts %+v; want one interrupt", err, res.Status, res.Interrupts)
			}
			req, ok := tool.ApprovalFrom(res.Interrupts[0])
			want := tool.ApprovalRequest{Kind: tool.ApprovalKind, CallID: "call_2", Tool: "send_email",
				Arguments: json.RawMessage(`{"to":"ann@example.com","body":"sunny"}`), Summary: "Email ann@example.com"}
			if !json.Valid(req.Parameters) || !strings.Contains(string(req.Parameters), `"to"`) {
				t.Errorf("the request's parameters %s are not send_email's schema", req.Parameters)
			}
			want.Parameters = req.Parameters
			// The same call in LangChain's human-in-the-loop shape.
			want.ActionRequests = []tool.ActionRequest{{Name: "send_email", Args: want.Arguments, Description: want.Summary}}
			want.ReviewConfigs = []tool.ReviewConfig{{ActionName: "send_email", AllowedDecisions: []string{"approve", "edit", "reject"}, ArgsSchema: req.Parameters}}
			if !ok || !cmp.Equal(want, req) {
				t.Fatalf("approval request = %+v, %v; want %+v", req, ok, want)
			}
			if r.get("weather:Oslo") != 1 || r.get("send_email:ann@example.com") != 0 {
				t.Fatalf("before the answer: weather ran %d, send_email %d; want 1 and 0", r.get("weather:Oslo"), r.get("send_email:ann@example.com"))
			}

			res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tc.decision))...)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.get("send_email:ann@example.com"); got != tc.runs {
				t.Errorf("send_email ran %d times; want %d", got, tc.runs)
			}
			if r.get("weather:Oslo") != 1 {
				t.Errorf("the read call ran again on resume (%d runs)", r.get("weather:Oslo"))
			}
			if got, _ := react.Answer(res.State); got != tc.answer {
				t.Errorf("answer = %q", got)
			}
			// The model's second request carries both results in call order.
			reqs := m.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests; want 2", len(reqs))
			}
			sent := reqs[1].Messages
			last := sent[len(sent)-1]
			if last.ToolCallID != "call_2" || last.Text() != tc.result || last.IsError != tc.isError {
				t.Errorf("the model saw %+v; want %q (error %v)", last, tc.result, tc.isError)
			}
			if sent[len(sent)-2].ToolCallID != "call_1" {
				t.Errorf("results out of call order: %v", roles(sent))
			}
			rec, _ := tool.LookupCall(res.State, react.Calls, "call_2")
			if rec.Approval != tc.outcome {
				t.Errorf("recorded outcome %s; want %s", rec.Approval, tc.outcome)
			}
		})
	}
}

func TestPolicyAutoApproves(t *testing.T) {
	m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call("send_email", `{"to":"bo","body":"hi"}`)), llmtest.Text("Sent."))
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{sendEmail(&r)}, Policy: tool.Policy{"send_email": tool.AutoApprove()}})
	res, err := g.Invoke(context.Background(), react.Input("go"))
	if err != nil {
		t.Fatal(err)
	}
	if r.get("send_email:bo") != 1 || res.Status != graph.StatusCompleted {
		t.Errorf("send_email ran %d times, status %s", r.get("send_email:bo"), res.Status)
	}
}

// A thread's next turn continues the history; a changed system prompt is
// not duplicated in it.
func TestThreadTurns(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("first"), llmtest.Text("second"))
	opts := threadOpts("chat")
	g1 := mustNew(t, react.Config{Model: m, System: "v1"})
	if _, err := g1.Invoke(context.Background(), react.Input("one"), opts...); err != nil {
		t.Fatal(err)
	}
	g2 := mustNew(t, react.Config{Model: m, System: "v2"})
	res, err := g2.Invoke(context.Background(), react.Input("two"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:one", "assistant:first", "user:two", "assistant:second"}
	if d := cmp.Diff(want, roles(react.Messages.Get(res.State))); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	last := m.LastRequest()
	if d := cmp.Diff(append([]string{"system:v2"}, want[:3]...), roles(last.Messages)); d != "" {
		t.Errorf("second turn's request (-want +got):\n%s", d)
	}
	if strings.Contains(last.System(), "v1") {
		t.Error("the old system prompt reached the model")
	}
}
