package planexec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Plan is the plan contract: the task, its steps, and the steps whose
// results may change the rest of the plan. The planner model writes it as
// JSON; a person may edit it during plan review.
type Plan struct {
	// Task states the whole task in a sentence or two.
	Task string `json:"task" jsonschema:"the whole task, in a sentence or two"`
	// Steps are the steps; a step runs once every step it depends on is
	// done, and steps that do not depend on one another run in parallel.
	Steps []Step `json:"steps" jsonschema:"the steps of the plan"`
	// Replan names steps whose results may change the rest of the plan:
	// at the end of the level that holds one of them, the planner is asked
	// for the remaining steps again.
	Replan []string `json:"replan,omitempty" jsonschema:"IDs of steps whose results may change the rest of the plan"`
}

// Step is one step of a Plan.
type Step struct {
	// ID identifies the step in depends_on and replan; unique in the plan.
	ID string `json:"id" jsonschema:"a short unique ID such as s1"`
	// Title names the step in a few words.
	Title string `json:"title" jsonschema:"the step in a few words"`
	// Description says what to do, for the agent that carries it out.
	Description string `json:"description" jsonschema:"what to do in this step"`
	// DependsOn lists the IDs of the steps whose results this step needs.
	DependsOn []string `json:"depends_on,omitempty" jsonschema:"IDs of the steps whose results this step needs"`
	// DoneWhen says how to tell that the step is complete.
	DoneWhen string `json:"done_when,omitempty" jsonschema:"how to tell that the step is complete"`
}

// PlanError lists what is wrong with a plan: every problem, each a
// sentence saying which step and what to change.
type PlanError struct {
	Problems []string
}

func (e *PlanError) Error() string {
	return "planexec: the plan cannot run: " + strings.Join(e.Problems, "; ")
}

// Step returns the step with this ID.
func (p Plan) Step(id string) (Step, bool) {
	for _, s := range p.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return Step{}, false
}

// Validate reports every problem that would stop the plan from running, as
// a *PlanError: no steps, steps without an ID or title, duplicate IDs,
// dependencies on unknown steps or on the step itself, dependency cycles
// (naming the steps on the cycle), and replan entries naming unknown steps.
func (p Plan) Validate() error {
	if probs := p.problems(); len(probs) > 0 {
		return &PlanError{Problems: probs}
	}
	return nil
}

func (p Plan) problems() []string {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if len(p.Steps) == 0 {
		add("the plan has no steps; give at least one")
	}
	ids := make(map[string]bool, len(p.Steps))
	for i, s := range p.Steps {
		switch {
		case strings.TrimSpace(s.ID) == "":
			add("step %d has no id; give every step a short unique id", i+1)
			continue
		case ids[s.ID]:
			add("two steps have the id %q; ids must be unique", s.ID)
		}
		ids[s.ID] = true
		if strings.TrimSpace(s.Title) == "" {
			add("step %q has no title", s.ID)
		}
	}
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			switch {
			case d == s.ID:
				add("step %q depends on itself; remove %q from its depends_on", s.ID, d)
			case !ids[d]:
				add("step %q depends on %q, which is not a step of the plan (the steps are %s)", s.ID, d, idList(p.Steps))
			}
		}
	}
	for _, id := range p.Replan {
		if !ids[id] {
			add("replan names %q, which is not a step of the plan", id)
		}
	}
	if cycle := p.cycle(); cycle != nil {
		add("steps %s depend on each other in a cycle, so none of them could start; break the cycle", strings.Join(cycle, " → "))
	}
	return probs
}

// cycle returns the IDs along a dependency cycle (the first repeated at
// the end), or nil. Unknown and self dependencies are left to problems.
// A repeated ID stands for its last step (duplicates are problems too).
// It works on step indexes, without maps of its own: dispatch validates
// the plan before every level.
func (p Plan) cycle() []string {
	at := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		at[s.ID] = i
	}
	const (
		unseen = iota
		open
		closed
	)
	state := make([]uint8, len(p.Steps))
	var path []int
	var found []string
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = open
		path = append(path, i)
		id := p.Steps[i].ID
		for _, d := range p.Steps[i].DependsOn {
			j, known := at[d]
			if !known || d == id {
				continue
			}
			switch state[j] {
			case open:
				start := slices.Index(path, j)
				for _, k := range path[start:] {
					found = append(found, p.Steps[k].ID)
				}
				found = append(found, d)
				return true
			case unseen:
				if visit(j) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = closed
		return false
	}
	for _, s := range p.Steps {
		if i := at[s.ID]; state[i] == unseen && visit(i) {
			return found
		}
	}
	return nil
}

// Levels groups the steps by dependency depth: level 0 holds the steps
// that depend on nothing, level n the steps whose deepest dependency is in
// level n-1. The steps of one level never depend on one another, so they
// can run in parallel. An invalid plan returns its *PlanError.
func (p Plan) Levels() ([][]Step, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p.waves(func(string) bool { return false }), nil
}

// waves groups the steps that are not finished into levels, treating
// finished steps as satisfied dependencies. The plan must be valid.
func (p Plan) waves(finished func(id string) bool) [][]Step {
	placed := map[string]bool{}
	done := func(id string) bool { return placed[id] || finished(id) }
	var levels [][]Step
	for {
		level := p.ready(done)
		if len(level) == 0 {
			return levels
		}
		for _, s := range level {
			placed[s.ID] = true
		}
		levels = append(levels, level)
	}
}

// ready returns the steps that are not finished and whose dependencies
// all are: the next level.
func (p Plan) ready(finished func(id string) bool) []Step {
	var out []Step
	for i, s := range p.Steps {
		if finished(s.ID) {
			continue
		}
		ok := true
		for _, d := range s.DependsOn {
			if !finished(d) {
				ok = false
				break
			}
		}
		if ok {
			if out == nil { // room for a usual level at once, not 1, 2, 4, 8
				out = make([]Step, 0, min(len(p.Steps)-i, 8))
			}
			out = append(out, s)
		}
	}
	return out
}

// merge builds the plan that follows a replan: the finished steps of old,
// as they were, then the steps of the reply that are not finished (a reply
// that repeats a finished step does not run it again). Replan entries that
// name finished steps are dropped, so one step triggers replanning once.
func merge(old, reply Plan, finished map[string]StepResult) Plan {
	out := Plan{Task: reply.Task}
	if strings.TrimSpace(out.Task) == "" {
		out.Task = old.Task
	}
	for _, s := range old.Steps {
		if _, ok := finished[s.ID]; ok {
			out.Steps = append(out.Steps, s)
		}
	}
	for _, s := range reply.Steps {
		if _, ok := finished[s.ID]; !ok {
			out.Steps = append(out.Steps, s)
		}
	}
	out.Replan = pendingOnly(reply.Replan, finished)
	return out
}

// pendingOnly returns the ids that are not finished, without duplicates.
func pendingOnly(ids []string, finished map[string]StepResult) []string {
	var out []string
	for _, id := range ids {
		if _, ok := finished[id]; !ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func idList(steps []Step) string {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = fmt.Sprintf("%q", s.ID)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// IsPlanError reports whether err is (or wraps) a *PlanError.
func IsPlanError(err error) bool {
	_, ok := errors.AsType[*PlanError](err)
	return ok
}
