package evaluators

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/eval"
)

// Match modes of tool_trajectory and node_path.
const (
	MatchStrict    = "strict"    // same items, same order, nothing else
	MatchUnordered = "unordered" // same items, any order
	MatchSubset    = "subset"    // every actual item is expected (nothing unexpected)
	MatchSuperset  = "superset"  // every expected item happened, any order, extras allowed (ADK ANY_ORDER)
	MatchInOrder   = "in_order"  // expected items happened in order, extras allowed between (ADK IN_ORDER)
)

// Argument modes of tool_trajectory.
const (
	ArgsExact  = "exact"  // arguments equal as JSON values
	ArgsSubset = "subset" // the expected arguments are contained in the actual ones
	ArgsIgnore = "ignore" // names only
)

// normMatch reads a match mode, accepting ADK's names (EXACT, IN_ORDER,
// ANY_ORDER) in any case, with - or space for _.
func normMatch(s string) (string, error) {
	n := strings.ToLower(strings.NewReplacer("-", "_", " ", "_").Replace(strings.TrimSpace(s)))
	switch n {
	case "", MatchStrict, "exact":
		return MatchStrict, nil
	case MatchUnordered, MatchSubset, MatchSuperset, MatchInOrder:
		return n, nil
	case "any_order":
		return MatchSuperset, nil
	}
	return "", fmt.Errorf("unknown match %q (want strict, unordered, subset, superset or in_order; ADK's EXACT, IN_ORDER, ANY_ORDER)", s)
}

// matches reports whether actual matches expected under mode, with eq
// saying whether an expected item (first) is met by an actual one.
func matches[T any](mode string, expected, actual []T, eq func(want, got T) bool) bool {
	switch mode {
	case MatchStrict:
		if len(expected) != len(actual) {
			return false
		}
		for i := range expected {
			if !eq(expected[i], actual[i]) {
				return false
			}
		}
		return true
	case MatchInOrder:
		// Matching each expected item to the earliest actual one left is
		// optimal for a subsequence check.
		j := 0
		for _, a := range actual {
			if j < len(expected) && eq(expected[j], a) {
				j++
			}
		}
		return j == len(expected)
	case MatchUnordered:
		return len(expected) == len(actual) && bipartite(expected, actual, eq) == len(expected)
	case MatchSuperset:
		return bipartite(expected, actual, eq) == len(expected)
	case MatchSubset:
		return bipartite(expected, actual, eq) == len(actual)
	}
	return false
}

// bipartite is the size of a maximum matching between expected and actual
// items (augmenting paths; trajectories are short). A greedy pairing
// would be wrong when eq is not an equivalence (argument subsets).
func bipartite[T any](expected, actual []T, eq func(want, got T) bool) int {
	owner := make([]int, len(actual)) // actual index → expected index, -1 free
	for i := range owner {
		owner[i] = -1
	}
	var try func(e int, seen []bool) bool
	try = func(e int, seen []bool) bool {
		for a := range actual {
			if seen[a] || !eq(expected[e], actual[a]) {
				continue
			}
			seen[a] = true
			if owner[a] < 0 || try(owner[a], seen) {
				owner[a] = e
				return true
			}
		}
		return false
	}
	n := 0
	for e := range expected {
		if try(e, make([]bool, len(actual))) {
			n++
		}
	}
	return n
}

// TrajectoryParams configure "tool_trajectory".
type TrajectoryParams struct {
	// Match is strict (default), unordered, subset, superset or in_order;
	// ADK's EXACT, IN_ORDER and ANY_ORDER are accepted.
	Match string `json:"match,omitempty"`
	// Args is exact (default), subset or ignore.
	Args string `json:"args,omitempty"`
}

func newToolTrajectory(params json.RawMessage) (eval.Evaluator, error) {
	var p TrajectoryParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	mode, err := normMatch(p.Match)
	if err != nil {
		return nil, fmt.Errorf("tool_trajectory: %w", err)
	}
	var eq func(want, got eval.ToolCall) bool
	switch strings.ToLower(p.Args) {
	case "", ArgsExact:
		eq = func(w, g eval.ToolCall) bool { return w.Name == g.Name && argsEqual(w.Args, g.Args) }
	case ArgsSubset:
		eq = func(w, g eval.ToolCall) bool { return w.Name == g.Name && argsSubset(w.Args, g.Args) }
	case ArgsIgnore:
		eq = func(w, g eval.ToolCall) bool { return w.Name == g.Name }
	default:
		return nil, fmt.Errorf("tool_trajectory: unknown args %q (want exact, subset or ignore)", p.Args)
	}
	return &evaluator{name: "tool_trajectory", fn: func(_ context.Context, t eval.Trial) (eval.Score, error) {
		exp := t.Case.Expect
		if len(exp.Turns) == 0 {
			ok := matches(mode, exp.ToolCalls, t.Thread.ToolCalls, eq)
			if ok {
				return eval.Score{Value: 1, Explanation: fmt.Sprintf("the trajectory matches (%s)", mode)}, nil
			}
			return eval.Score{Explanation: fmt.Sprintf("the trajectory %s does not match the expected %s (%s, args %s)",
				callNames(t.Thread.ToolCalls), callNames(exp.ToolCalls), mode, orDefault(p.Args, ArgsExact))}, nil
		}
		// Per turn, as ADK scores invocations: 1 or 0 each, averaged.
		var sum float64
		var bad []string
		turns := turnsOf(t.Thread)
		for i, want := range exp.Turns {
			var got []eval.ToolCall
			if i < len(turns) {
				got = turns[i].ToolCalls
			}
			if matches(mode, want.ToolCalls, got, eq) {
				sum++
			} else {
				bad = append(bad, fmt.Sprintf("turn %d: %s, want %s", i+1, callNames(got), callNames(want.ToolCalls)))
			}
		}
		s := eval.Score{Value: sum / float64(len(exp.Turns))}
		if len(bad) == 0 {
			s.Explanation = fmt.Sprintf("every turn's trajectory matches (%s)", mode)
		} else {
			s.Explanation = fmt.Sprintf("%d of %d turns match (%s, args %s); %s", int(sum), len(exp.Turns), mode, orDefault(p.Args, ArgsExact), strings.Join(bad, "; "))
		}
		return s, nil
	}}, nil
}

// NodePathParams configure "node_path".
type NodePathParams struct {
	// Match is strict (default), unordered, subset, superset or in_order.
	Match string `json:"match,omitempty"`
}

func newNodePath(params json.RawMessage) (eval.Evaluator, error) {
	var p NodePathParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	mode, err := normMatch(p.Match)
	if err != nil {
		return nil, fmt.Errorf("node_path: %w", err)
	}
	return &evaluator{name: "node_path", fn: func(_ context.Context, t eval.Trial) (eval.Score, error) {
		want := t.Case.Expect.Nodes
		if want == nil {
			return eval.Score{Explanation: "the case has no expected node path (expect.nodes)"}, nil
		}
		if matches(mode, want, t.Thread.Nodes, func(a, b string) bool { return a == b }) {
			return eval.Score{Value: 1, Explanation: fmt.Sprintf("the node path matches (%s)", mode)}, nil
		}
		return eval.Score{Explanation: fmt.Sprintf("the node path [%s] does not match [%s] (%s)",
			strings.Join(t.Thread.Nodes, " "), strings.Join(want, " "), mode)}, nil
	}}, nil
}

func callNames(calls []eval.ToolCall) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
		if len(c.Args) > 0 && string(c.Args) != "{}" && string(c.Args) != "null" {
			names[i] += clip(string(c.Args), 60)
		}
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
