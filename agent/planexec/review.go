package planexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/answer"
	"github.com/trellis-agents/trellis/llm"
)

// ReviewKind is the Kind of every PlanReview.
const ReviewKind = "planexec_plan_review"

// PlanReview is the payload of the interrupt that asks a person to confirm
// the plan (with ConfirmPlan); decode it with ReviewFrom and answer with a
// ReviewDecision.
type PlanReview struct {
	// Kind is ReviewKind.
	Kind string `json:"kind"`
	Plan Plan   `json:"plan"`
	// Problem, when set, says why the person is asked again: the previous
	// answer edited the plan into one that cannot run, or was not a known
	// action. Plan is then the edited plan.
	Problem string `json:"problem,omitempty"`
	// Revised is set when the plan is under way and a replan changed
	// what the person approved: Changed lists the steps that differ
	// (changed, dropped or added), Finished the steps already done,
	// which run no more whatever the answer. Approving runs the revised
	// plan; rejecting with feedback has the planner revise it again;
	// an edit replaces the steps still to run.
	Revised  bool     `json:"revised,omitempty"`
	Changed  []string `json:"changed,omitempty"`
	Finished []string `json:"finished,omitempty"`
}

// ReviewAction is what a person decided about a plan.
type ReviewAction string

// The review actions.
const (
	// ReviewApprove runs the plan.
	ReviewApprove ReviewAction = "approve"
	// ReviewEdit runs the decision's Plan instead. It is checked first; a
	// plan that cannot run is sent back to the person with the problems.
	ReviewEdit ReviewAction = "edit"
	// ReviewReject sends the decision's Feedback to the planner, which
	// plans again.
	ReviewReject ReviewAction = "reject"
)

// ReviewDecision answers a PlanReview. Build one with ApprovePlan,
// EditPlan or RejectPlan; it crosses processes as JSON.
type ReviewDecision struct {
	Action   ReviewAction `json:"action"`
	Plan     *Plan        `json:"plan,omitempty"`
	Feedback string       `json:"feedback,omitempty"`
}

// ApprovePlan returns a decision to run the plan as it is.
func ApprovePlan() ReviewDecision { return ReviewDecision{Action: ReviewApprove} }

// EditPlan returns a decision to run p instead.
func EditPlan(p Plan) ReviewDecision { return ReviewDecision{Action: ReviewEdit, Plan: &p} }

// RejectPlan returns a decision to plan again, following feedback.
func RejectPlan(feedback string) ReviewDecision {
	return ReviewDecision{Action: ReviewReject, Feedback: feedback}
}

// reviewSchema is the JSON Schema of a ReviewDecision, which plan reviews
// carry in their interrupt (graph.InterruptInfo.Schema).
// (A test checks it is not nil: SchemaFor fails only for types it cannot
// describe, which would be a bug in this package.)
var reviewSchema = sync.OnceValue(func() json.RawMessage {
	obj, _ := llm.SchemaFor[reviewObject]()
	feedback, _ := json.Marshal(map[string]any{"type": "string", "minLength": 1, "description": "feedback: plan again following it"})
	return answer.AnyOf(answer.ConfirmSchema(), feedback, obj)
})

// reviewObject is a ReviewDecision's object form, for its schema.
type reviewObject ReviewDecision

// UnmarshalJSON reads a plan review as a person may give it: the object
// form {"action", "plan", "feedback"}; a plain confirmation (true,
// "approve", "accept", "是", "确认" run the plan; false, "reject", "否",
// "拒绝" plan again); or any other text, taken as feedback to plan again
// with.
func (d *ReviewDecision) UnmarshalJSON(b []byte) error {
	if yes, ok := answer.Confirm(b); ok {
		if yes {
			*d = ApprovePlan()
		} else {
			*d = RejectPlan("")
		}
		return nil
	}
	if s, ok := answer.String(b); ok {
		if strings.TrimSpace(s) == "" {
			return errors.New("planexec: an empty plan review: approve (true), reject (false), or say what to change")
		}
		*d = RejectPlan(strings.TrimSpace(s))
		return nil
	}
	var o reviewObject
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("planexec: a plan review is true, false, feedback text or {action, plan, feedback}: %w", err)
	}
	*d = ReviewDecision(o)
	return nil
}

// ReviewFrom decodes the plan review an interrupt carries. It reports
// false for interrupts that are not plan reviews.
func ReviewFrom(in graph.InterruptInfo) (PlanReview, bool) {
	var r PlanReview
	if json.Unmarshal(in.Payload, &r) != nil || r.Kind != ReviewKind {
		return PlanReview{}, false
	}
	return r, true
}

// reviewNode asks a person to confirm the plan, until the answer is
// usable.
func (a *agent) reviewNode(ctx context.Context, s graph.State) (graph.Output, error) {
	to := func(node string, ws ...graph.Write) graph.Command {
		return graph.Command{Goto: []graph.Target{graph.To(node)}, Update: ws}
	}
	if a.nested(ctx) {
		return to(DispatchNode), nil
	}
	current, results := CurrentPlan.Get(s), Steps.Get(s)
	r := PlanReview{Kind: ReviewKind, Plan: current}
	if len(results) > 0 {
		r.Revised = true
		r.Changed = changedSteps(approvedKey.Get(s), current, results)
		for _, st := range current.Steps {
			if _, ok := results[st.ID]; ok {
				r.Finished = append(r.Finished, st.ID)
			}
		}
	}
	for {
		d, err := graph.Interrupt[ReviewDecision](ctx, r, graph.ExpectAnswer(reviewSchema()))
		if err != nil {
			emitWaiting(ctx, "", err)
			return nil, err
		}
		switch d.Action {
		case ReviewApprove:
			return to(DispatchNode, approvedKey.Set(current)), nil
		case ReviewReject:
			f := strings.TrimSpace(d.Feedback)
			if r.Revised { // under way: revise the steps still to do
				return to(ReplanNode, feedbackKey.Set(cmpOr(f, "(no reason given) make a different revision"))), nil
			}
			text := "The user rejected this plan without saying why. Make a different plan."
			if f != "" {
				text = "The user rejected this plan. Their feedback: " + f + "\nMake a new plan that follows it."
			}
			return to(PlanNode, graph.Append(PlanMessages, llm.User(text))), nil
		case ReviewEdit:
			if d.Plan == nil {
				r.Problem = "The edit carried no plan; send the edited plan, or approve or reject this one."
				continue
			}
			p := *d.Plan
			if r.Revised { // the finished steps stay as they ran
				p = merge(current, p, results)
			}
			if probs := p.problems(); len(probs) > 0 {
				r.Plan = *d.Plan
				r.Problem = "The edited plan cannot run: " + strings.Join(probs, "; ") + ". Fix it, or approve or reject the plan."
				continue
			}
			b, _ := json.Marshal(p)
			emit(ctx, Event{Kind: EventPlanReady, Plan: &p})
			return to(DispatchNode,
				CurrentPlan.Set(p),
				approvedKey.Set(p),
				graph.Append(PlanMessages, llm.User("The user edited the plan; it is now: "+string(b))),
			), nil
		default:
			r.Problem = fmt.Sprintf("The answer's action %q is not one of %q, %q or %q.", d.Action, ReviewApprove, ReviewEdit, ReviewReject)
		}
	}
}
