package planexec

import (
	"testing"
)

func validPlan() Plan {
	return Plan{Task: "t", Steps: []Step{
		{ID: "a", Title: "A"},
		{ID: "b", Title: "B", DependsOn: []string{"a"}},
		{ID: "c", Title: "C", DependsOn: []string{"a", "b"}},
	}, Replan: []string{"b"}}
}

// The memo answers for the plan it checked, and for an equal plan, without
// checking again: dispatch checks the plan before every level.
func TestValidatedSkipsTheSamePlan(t *testing.T) {
	var v validated
	p := validPlan()
	if err := v.check(p); err != nil {
		t.Fatal(err)
	}
	if raceEnabled {
		return // the race detector allocates on its own
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := v.check(p); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("checking a plan already found valid allocates %.0f times; want 0 (no second validation)", n)
	}
	if err := v.check(validPlan()); err != nil { // equal, not the same slices
		t.Fatal(err)
	}
}

// Whatever Validate reads, changed in place or in a new plan, is checked
// again: the memo never lets an invalid plan through.
func TestValidatedChecksAChangedPlan(t *testing.T) {
	for name, change := range map[string]func(p *Plan){
		"dependency edited in place":   func(p *Plan) { p.Steps[1].DependsOn[0] = "zz" },
		"cycle made in place":          func(p *Plan) { p.Steps[0].DependsOn = []string{"c"} },
		"id edited in place":           func(p *Plan) { p.Steps[2].ID = "a" },
		"title emptied":                func(p *Plan) { p.Steps[0].Title = " " },
		"replan names an unknown step": func(p *Plan) { p.Replan[0] = "nope" },
		"a step dropped":               func(p *Plan) { p.Steps = p.Steps[1:] },
		"no steps":                     func(p *Plan) { p.Steps = nil },
	} {
		t.Run(name, func(t *testing.T) {
			var v validated
			p := validPlan()
			if err := v.check(p); err != nil {
				t.Fatal(err)
			}
			change(&p)
			err := v.check(p)
			if err == nil || !IsPlanError(err) {
				t.Fatalf("check after the change = %v; want the *PlanError Validate gives (%v)", err, p.Validate())
			}
			if err.Error() != p.Validate().Error() {
				t.Errorf("check after the change = %q; want Validate's %q", err, p.Validate())
			}
		})
	}
}
