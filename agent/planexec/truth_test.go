package planexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

type sizeArgs struct {
	People int `json:"people"`
}

// book is a write tool that refuses more than 40 people, as the planner's
// agency does.
func book(c *counter) tool.Tool {
	return tool.MustFunc("book", "Book a room.", func(_ context.Context, a sizeArgs) (string, error) {
		if a.People > 40 {
			return "", tool.BadArguments("book", "people is %d; at most 40", a.People)
		}
		c.add("book")
		return "Booked, confirmation B-1.", nil
	})
}

// A write a person rejects with a reason did not happen, whatever the
// step's model says: the step's outcome records the rejection and the
// reason (in the thread's state), the delivery's input says it did not
// happen with the reason, and the mechanical summary says so too.
func TestRejectedWriteIsNotReportedDone(t *testing.T) {
	for _, deliverFails := range []bool{false, true} {
		name := map[bool]string{false: "model delivers", true: "mechanical summary"}[deliverFails]
		t.Run(name, func(t *testing.T) {
			var c counter
			m := llmtest.New()
			m.When(node(planexec.IntentNode), isTask)
			m.When(node(planexec.PlanNode), simplePlan(st("a", "Publish")))
			// A model that claims success whatever the tool said.
			m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("publish", `{"q":"post"}`)), llmtest.Text("Published the post."))
			if deliverFails {
				m.When(node(planexec.DeliverNode), llmtest.Fail(errors.New("down")))
			} else {
				m.When(node(planexec.DeliverNode), llmtest.Text("Summary."))
			}
			cfg := planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{publish(&c)}, Logger: quiet}
			opts := thread(checkpoint.NewMemory(), "reject")
			res, err := mustNew(t, cfg).Invoke(context.Background(), planexec.Input("go"), opts...)
			interrupted(t, res, err)
			var finished planexec.Event
			for ev, err := range mustNew(t, cfg).Stream(context.Background(), nil,
				append(opts, graph.WithResume(tool.Reject("not before Friday")), graph.WithEvents(graph.EventCustom|graph.EventValues))...) {
				if err != nil {
					t.Fatal(err)
				}
				if e, ok := planexec.EventFrom(ev); ok && e.Kind == planexec.EventStepFinished {
					finished = e
				}
				if ev.Kind == graph.EventValues {
					res = &graph.Result{State: ev.State}
				}
			}
			if c.get("publish:post") != 0 {
				t.Fatal("the rejected call ran")
			}
			want := []planexec.CallOutcome{{Tool: "publish", Arguments: `{"q":"post"}`, Outcome: planexec.CallRejected, Reason: "not before Friday"}}
			if d := cmp.Diff(want, planexec.Steps.Get(res.State)["a"].Undone); d != "" {
				t.Errorf("step a's undone calls (-want +got):\n%s", d)
			}
			if !strings.Contains(finished.Error, "rejected") || !strings.Contains(finished.Error, "not before Friday") {
				t.Errorf("the step_finished event does not say the call was rejected: %+v", finished)
			}
			got := answer(t, res)
			if deliverFails {
				if !strings.Contains(got, "rejected") || !strings.Contains(got, "not before Friday") {
					t.Errorf("the mechanical summary does not say the write was rejected and why:\n%s", got)
				}
				return
			}
			report := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser()
			if !strings.Contains(report, "did NOT happen") || !strings.Contains(report, `"not before Friday"`) {
				t.Errorf("the delivery's input does not say the write did not happen, with the reason:\n%s", report)
			}
		})
	}
}

// A write refused for its arguments did not happen either; one that a
// later call of the same tool made up for is not reported.
func TestFailedWriteIsNotReportedDone(t *testing.T) {
	for _, retry := range []bool{false, true} {
		t.Run(map[bool]string{false: "left failed", true: "retried"}[retry], func(t *testing.T) {
			var c counter
			m := llmtest.New()
			m.When(node(planexec.IntentNode), isTask)
			m.When(node(planexec.PlanNode), simplePlan(st("a", "Book"), st("b", "Tell", "a")))
			turns := []llmtest.Turn{llmtest.ToolCalls(llmtest.Call("book", `{"people":500}`))}
			if retry {
				turns = append(turns, llmtest.ToolCalls(llmtest.Call("book", `{"people":12}`)))
			}
			m.When(inStep("a"), append(turns, llmtest.Text("Booked."))...)
			m.When(inStep("b"), llmtest.Text("Told."))
			m.When(node(planexec.DeliverNode), llmtest.Text("Summary."))
			cfg := planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{book(&c)}, Policy: tool.Policy{"book": tool.AutoApprove()}}
			res, err := mustNew(t, cfg).Invoke(context.Background(), planexec.Input("go"))
			if err != nil {
				t.Fatal(err)
			}
			undone := planexec.Steps.Get(res.State)["a"].Undone
			report := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser()
			next := requestsFrom(m, inStep("b"))[0].LastUser()
			if retry {
				if len(undone) != 0 || strings.Contains(report, "did NOT happen") {
					t.Errorf("a call made up for by a later one is reported undone: %+v\n%s", undone, report)
				}
				return
			}
			if len(undone) != 1 || undone[0].Outcome != planexec.CallFailed || !strings.Contains(undone[0].Reason, "people is 500") {
				t.Fatalf("step a's undone calls = %+v; want the failed booking", undone)
			}
			if !strings.Contains(report, "did NOT happen") || !strings.Contains(report, "people is 500") {
				t.Errorf("the delivery's input does not say the booking failed:\n%s", report)
			}
			if !strings.Contains(next, "Did not happen: book") {
				t.Errorf("the dependent step was not told the booking did not happen:\n%s", next)
			}
		})
	}
}

// A plan the person edited is never silently replaced: a replan that
// changes what they approved comes back as a new plan review (Revised,
// naming the changed and the finished steps); rejecting it with feedback
// has the replanner revise again, told why. With KeepApproved the
// approved steps stay as they were and only new steps are added.
func TestReplanOfAnApprovedPlanIsReviewed(t *testing.T) {
	edited := planexec.Plan{Task: "the task", Steps: []planexec.Step{
		st("a", "Survey"), st("b", "Follow up", "a"), st("c", "My own step", "a"),
	}, Replan: []string{"a"}}
	overwrite := planexec.Plan{Task: "the task", Steps: []planexec.Step{st("b", "Follow up differently", "a"), st("d", "New", "a")}}
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "review", true: "keep approved"}[keep], func(t *testing.T) {
			var c counter
			m := llmtest.New()
			m.When(node(planexec.IntentNode), isTask)
			m.When(node(planexec.PlanNode), planReply("simple", []string{"a"}, st("a", "Survey"), st("b", "Follow up", "a")))
			m.When(node(planexec.ReplanNode), llmtest.JSON(overwrite), llmtest.JSON(planexec.Plan{Steps: edited.Steps[1:]}))
			for _, id := range []string{"a", "b", "c", "d"} {
				m.When(inStep(id), llmtest.Text(id+" done")).Repeat()
			}
			m.When(node(planexec.DeliverNode), llmtest.Text("Summary.")).Repeat()
			cfg := planexec.Config{Model: m, PlanMode: true, ConfirmPlan: true, KeepApproved: keep, Tools: []tool.Tool{lookup(&c)}}
			opts := thread(checkpoint.NewMemory(), "edited")
			res, err := mustNew(t, cfg).Invoke(context.Background(), planexec.Input("go"), opts...)
			interrupted(t, res, err)
			res, err = mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.EditPlan(edited)))...)
			if keep {
				if err != nil {
					t.Fatal(err)
				}
				plan := planexec.CurrentPlan.Get(res.State)
				var ids []string
				for _, s := range plan.Steps {
					ids = append(ids, s.ID+":"+s.Title)
				}
				if d := cmp.Diff([]string{"a:Survey", "b:Follow up", "c:My own step", "d:New"}, ids); d != "" {
					t.Errorf("plan after the replan (-want +got):\n%s", d)
				}
				if got := stepStatuses(res.State); len(got) != 4 {
					t.Errorf("steps run: %v; want a, b, c and d", got)
				}
				return
			}
			in := interrupted(t, res, err)
			rv, ok := planexec.ReviewFrom(in)
			if !ok || !rv.Revised {
				t.Fatalf("after the replan: %+v; want a revised plan review", in)
			}
			if d := cmp.Diff([]string{"b", "c", "d"}, rv.Changed); d != "" {
				t.Errorf("changed steps (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"a"}, rv.Finished); d != "" {
				t.Errorf("finished steps (-want +got):\n%s", d)
			}
			if n := len(requestsFrom(m, inStep("b"))) + len(requestsFrom(m, inStep("d"))); n != 0 {
				t.Fatalf("%d requests of the revised steps ran before the review", n)
			}
			res, err = mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.RejectPlan("keep my step c")))...)
			if err != nil {
				t.Fatal(err)
			}
			replans := requestsFrom(m, node(planexec.ReplanNode))
			if len(replans) != 2 || !strings.Contains(replans[1].LastUser(), "keep my step c") {
				t.Fatalf("the replanner was not asked again with the feedback: %d requests", len(replans))
			}
			want := map[string]planexec.StepStatus{"a": planexec.StepDone, "b": planexec.StepDone, "c": planexec.StepDone}
			if d := cmp.Diff(want, stepStatuses(res.State)); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			if n := len(requestsFrom(m, inStep("a"))); n != 1 {
				t.Errorf("step a ran %d times; want once", n)
			}
		})
	}
}
