package planexec

import (
	"slices"
	"sync/atomic"
)

// validated remembers the shape of the last plan that passed Validate, so
// that dispatch, which checks the plan before every level (the state may
// have been edited between two levels), does not redo the check for the
// plan it checked a level ago. What Validate reads of a plan — the IDs,
// the titles, the dependencies and the replan entries — is copied into
// slices of its own (strings are immutable, slices are not), so a plan
// changed in place afterwards compares unequal and is checked again.
type validated struct {
	last atomic.Pointer[validShape]
}

// validShape is what Validate reads of a plan: per step its ID and title,
// the number of its dependencies, and all dependencies in step order.
type validShape struct {
	ids, titles []string
	ndeps       []int
	deps        []string
	replan      []string
}

// check validates p unless its shape is the last one found valid.
func (v *validated) check(p Plan) error {
	if last := v.last.Load(); last != nil && last.matches(p) {
		return nil
	}
	if err := p.Validate(); err != nil {
		return err
	}
	v.last.Store(shapeOf(p))
	return nil
}

func shapeOf(p Plan) *validShape {
	n, d := len(p.Steps), 0
	for _, s := range p.Steps {
		d += len(s.DependsOn)
	}
	sh := &validShape{
		ids: make([]string, 0, n), titles: make([]string, 0, n), ndeps: make([]int, 0, n),
		deps: make([]string, 0, d), replan: slices.Clone(p.Replan),
	}
	for _, s := range p.Steps {
		sh.ids = append(sh.ids, s.ID)
		sh.titles = append(sh.titles, s.Title)
		sh.ndeps = append(sh.ndeps, len(s.DependsOn))
		sh.deps = append(sh.deps, s.DependsOn...)
	}
	return sh
}

func (sh *validShape) matches(p Plan) bool {
	if len(p.Steps) != len(sh.ids) || !slices.Equal(p.Replan, sh.replan) {
		return false
	}
	deps := sh.deps
	for i, s := range p.Steps {
		if s.ID != sh.ids[i] || s.Title != sh.titles[i] || len(s.DependsOn) != sh.ndeps[i] {
			return false
		}
		if !slices.Equal(s.DependsOn, deps[:len(s.DependsOn)]) {
			return false
		}
		deps = deps[len(s.DependsOn):]
	}
	return true
}
