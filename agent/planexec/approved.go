package planexec

import (
	"slices"

	"github.com/trellis-agents/trellis/graph"
)

// approvedKey holds the plan as a person last approved it (or edited it)
// at review, so a replan can tell whether it changes what they approved.
// Empty when no one reviewed the current task's plan.
var approvedKey = graph.NewKey[Plan]("planexec_approved")

// feedbackKey holds a person's feedback on a revised plan they rejected
// while the plan runs, for the replanner's next reply; it is cleared once
// read.
var feedbackKey = graph.NewKey[string]("planexec_replan_feedback")

// sameStep reports whether two versions of a step say the same thing.
func sameStep(a, b Step) bool {
	if a.ID != b.ID || a.Title != b.Title || a.Description != b.Description || a.DoneWhen != b.DoneWhen {
		return false
	}
	x, y := slices.Clone(a.DependsOn), slices.Clone(b.DependsOn)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// changedSteps returns the IDs of the steps of plan that differ from what
// a person approved, among those that have not run: approved steps
// changed or dropped, and steps added. It is nil when nothing was
// approved (no review) or nothing changed.
func changedSteps(approved, plan Plan, finished map[string]StepResult) []string {
	if len(approved.Steps) == 0 {
		return nil
	}
	var out []string
	for _, st := range approved.Steps {
		if _, done := finished[st.ID]; done {
			continue
		}
		if now, ok := plan.Step(st.ID); !ok || !sameStep(st, now) {
			out = append(out, st.ID)
		}
	}
	for _, st := range plan.Steps {
		if _, done := finished[st.ID]; done {
			continue
		}
		if _, ok := approved.Step(st.ID); !ok {
			out = append(out, st.ID)
		}
	}
	return out
}

// keepApproved builds the plan that follows a replan under KeepApproved:
// the finished steps as they were, the approved steps that have not run
// as approved, then the reply's other new steps.
func keepApproved(old, approved, reply Plan, finished map[string]StepResult) Plan {
	out := Plan{Task: old.Task}
	kept := map[string]bool{}
	for _, s := range old.Steps {
		if _, ok := finished[s.ID]; ok {
			out.Steps = append(out.Steps, s)
			kept[s.ID] = true
		}
	}
	for _, s := range approved.Steps {
		if !kept[s.ID] {
			out.Steps = append(out.Steps, s)
			kept[s.ID] = true
		}
	}
	for _, s := range reply.Steps {
		if !kept[s.ID] {
			out.Steps = append(out.Steps, s)
		}
	}
	for _, id := range pendingOnly(append(slices.Clone(old.Replan), reply.Replan...), finished) {
		if _, ok := out.Step(id); ok {
			out.Replan = append(out.Replan, id)
		}
	}
	return out
}
