package planexec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/planexec"
)

func ids(levels [][]planexec.Step) [][]string {
	out := make([][]string, len(levels))
	for i, l := range levels {
		for _, s := range l {
			out[i] = append(out[i], s.ID)
		}
	}
	return out
}

func TestLevels(t *testing.T) {
	p := planexec.Plan{Task: "t", Steps: []planexec.Step{
		st("d", "D", "c", "a"),
		st("a", "A"),
		st("c", "C", "a", "b"),
		st("b", "B"),
		st("e", "E", "a"),
	}}
	levels, err := p.Levels()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b"}, {"c", "e"}, {"d"}}
	if d := cmp.Diff(want, ids(levels)); d != "" {
		t.Errorf("levels (-want +got):\n%s", d)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan planexec.Plan
		want []string
	}{
		{"empty", planexec.Plan{}, []string{"the plan has no steps; give at least one"}},
		{"ids and titles", planexec.Plan{Steps: []planexec.Step{{Title: "x"}, {ID: "a"}, {ID: "a", Title: "y"}}},
			[]string{"step 1 has no id; give every step a short unique id", `step "a" has no title`, `two steps have the id "a"; ids must be unique`}},
		{"dependencies", planexec.Plan{Steps: []planexec.Step{st("a", "A", "a", "zz")}, Replan: []string{"q"}},
			[]string{`step "a" depends on itself; remove "a" from its depends_on`,
				`step "a" depends on "zz", which is not a step of the plan (the steps are "a")`,
				`replan names "q", which is not a step of the plan`}},
		{"cycle", planexec.Plan{Steps: []planexec.Step{st("a", "A"), st("b", "B", "a", "d"), st("c", "C", "b"), st("d", "D", "c")}},
			[]string{"steps b → d → c → b depend on each other in a cycle, so none of them could start; break the cycle"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.plan.Validate()
			pe, ok := errors.AsType[*planexec.PlanError](err)
			if !ok {
				t.Fatalf("err = %v; want a *PlanError", err)
			}
			if !strings.HasPrefix(err.Error(), "planexec: the plan cannot run: ") {
				t.Errorf("error text %q", err)
			}
			if d := cmp.Diff(tc.want, pe.Problems); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
			if _, err := tc.plan.Levels(); !planexec.IsPlanError(err) {
				t.Errorf("Levels accepted the plan: %v", err)
			}
		})
	}
}
