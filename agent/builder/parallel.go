package builder

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/trellis-agents/trellis/graph"
)

// joinDecl is a Join.
type joinDecl struct {
	to   string
	from []string
}

// Parallel runs several nodes at once after from answers (a fan-out):
// when none of from's conditions holds, every node in to runs, each in
// its own branch, in the same step. It takes the place of from's
// unconditional edge. The branches share the conversation: each sees it
// as it was when they started, and their answers are all added to it.
// Gather the branches again with Join; a branch with no edge of its own
// and in no Join simply ends.
func (b *Builder) Parallel(from string, to ...string) *Builder {
	if len(to) < 2 {
		b.fail("Parallel(%q) needs at least two nodes to run at once (use Edge for one)", from)
		return b
	}
	if b.parallel == nil {
		b.parallel = map[string][]string{}
	}
	if b.parallel[from] != nil {
		b.fail("Parallel(%q) is declared twice; list every branch in one call", from)
		return b
	}
	b.parallel[from] = slices.Clone(to)
	return b
}

// Join makes to run once every node in from has answered (and its route
// has run): the join waits for the slowest branch, and to sees every
// branch's answer in the conversation. A node in from has no edge of its
// own: the join is how its branch goes on.
func (b *Builder) Join(to string, from ...string) *Builder {
	if len(from) < 2 {
		b.fail("Join(%q) needs at least two nodes to wait for (use Edge for one)", to)
		return b
	}
	b.joins = append(b.joins, joinDecl{to: to, from: slices.Clone(from)})
	return b
}

// checkParallel reports Parallel and Join declarations that name unknown
// nodes or clash with other edges.
func (b *Builder) checkParallel(known string) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, from := range slices.Sorted(maps.Keys(b.parallel)) {
		if b.byName[from] == nil {
			add("Parallel leaves %q, which is not an LLM node (nodes: %s)", from, known)
		}
		if to, ok := b.defaults[from]; ok {
			add("node %q has both Parallel branches and an unconditional edge (to %s); Parallel takes the place of its edge", from, target(to))
		}
		seen := map[string]bool{}
		for _, to := range b.parallel[from] {
			if b.byName[to] == nil {
				add("Parallel from %q runs %q, which is not an LLM node (nodes: %s)", from, to, known)
			}
			if seen[to] {
				add("Parallel from %q names %q twice", from, to)
			}
			seen[to] = true
		}
	}
	for _, j := range b.joins {
		if b.byName[j.to] == nil {
			add("Join goes to %q, which is not an LLM node (nodes: %s)", j.to, known)
		}
		for _, f := range j.from {
			if b.byName[f] == nil {
				add("Join into %q waits for %q, which is not an LLM node (nodes: %s)", j.to, f, known)
			}
			if to, ok := b.defaults[f]; ok {
				add("node %q is joined into %q but also has an unconditional edge (to %s); the join is how its branch goes on", f, j.to, target(to))
			}
		}
	}
	return errs
}

// fanOut is the route edge of a node with Parallel branches: every branch
// when no condition held, else the condition's target.
func fanOut(node string, paths map[string]string, parallel []string) graph.FanoutFunc {
	return func(_ context.Context, s graph.State) ([]graph.Target, error) {
		key := decisions.Get(s)[node]
		if key == pathOtherwise {
			out := make([]graph.Target, len(parallel))
			for i, p := range parallel {
				out[i] = graph.To(p)
			}
			return out, nil
		}
		to, ok := paths[key]
		if !ok {
			return nil, fmt.Errorf("builder: node %q's route chose %q, which is no path", node, key)
		}
		return []graph.Target{graph.To(to)}, nil
	}
}

// fanDests are every node fanOut may name.
func fanDests(paths map[string]string, parallel []string) []string {
	out := slices.Clone(parallel)
	for _, to := range paths {
		if !slices.Contains(out, to) {
			out = append(out, to)
		}
	}
	slices.Sort(out)
	return out
}
