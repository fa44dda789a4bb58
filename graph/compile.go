package graph

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
)

const endIdx = -1

// Graph is a compiled graph, ready to run. It is immutable and safe for
// concurrent runs.
type Graph struct {
	name     string
	sch      *schema
	nodes    []*cnode // sorted by name: a node's index is its rank in name order
	byName   map[string]int
	start    *cnode // the START pseudo-node's routing (idx -2)
	joins    []*cjoin
	defaults []RunOption
	memo     *runMemo // what its runs share: slab sizes, buffers (see slab.go); copies share it
}

type cnode struct {
	*nodeSpec
	idx    int
	succ   []int
	conds  []*ccond
	fans   []*cfan
	joins  []int          // joins this node is a source of
	joinAt []int          // its place among each of those joins' sources
	gotos  map[string]int // allowed goto targets
	// wirePath is the path of the node's edge-triggered tasks in
	// checkpoints ("node:" and its name), made once instead of per save
	wirePath string
	// slow is set while the node's last parallel task ran for slowTask or
	// longer: its next parallel steps start a goroutine per task (see
	// runParallel). Runs of the graph share it.
	slow atomic.Bool
}

type ccond struct {
	route RouteFunc
	paths map[string]int
	keys  []string // sorted path-map keys, for errors
}

type cfan struct {
	fan   FanoutFunc
	dests map[string]int
}

type cjoin struct {
	to   int
	from []int
}

// Name returns the graph's name (see Builder.SetName).
func (g *Graph) Name() string { return g.name }

// Nodes lists the graph's node names in name order.
func (g *Graph) Nodes() []string {
	out := make([]string, len(g.nodes))
	for i, n := range g.nodes {
		out[i] = n.name
	}
	return out
}

// Compile validates the graph and returns it ready to run. opts become the
// defaults of every run (each run's own options come after them). The error
// lists every problem found, one per line: unknown or duplicate nodes, edges
// that name unknown nodes, a missing entry, path-map targets that do not
// exist, nodes with no outgoing edge, nodes no path from START reaches.
func (b *Builder) Compile(opts ...RunOption) (*Graph, error) {
	errs := slices.Clone(b.errs)
	sch, kerrs := newSchema(b.keys)
	errs = append(errs, kerrs...)

	specs := slices.Clone(b.nodes)
	slices.SortFunc(specs, func(x, y *nodeSpec) int { return strings.Compare(x.name, y.name) })
	g := &Graph{name: b.name, sch: sch, byName: make(map[string]int, len(specs)), defaults: opts, memo: &runMemo{}}
	for i, s := range specs {
		g.nodes = append(g.nodes, &cnode{nodeSpec: s, idx: i, wirePath: "node:" + s.name})
		g.byName[s.name] = i
	}
	g.start = &cnode{nodeSpec: &nodeSpec{name: START}, idx: -2}

	// resolve finds a node index for an edge endpoint.
	resolve := func(name, what string, allowEnd bool) (int, bool) {
		if name == END {
			if allowEnd {
				return endIdx, true
			}
			errs = append(errs, fmt.Errorf("%s: END cannot be a source", what))
			return 0, false
		}
		if name == START {
			errs = append(errs, fmt.Errorf("%s: START cannot be a target", what))
			return 0, false
		}
		i, ok := g.byName[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unknown node %q%s", what, name, suggest(name, g.byName)))
		}
		return i, ok
	}
	from := func(name, what string) *cnode {
		if name == START {
			return g.start
		}
		if i, ok := resolve(name, what, false); ok {
			return g.nodes[i]
		}
		return nil
	}

	for _, e := range b.edges {
		what := fmt.Sprintf("edge %s -> %s", e[0], e[1])
		src := from(e[0], what)
		dst, ok := resolve(e[1], what, true)
		if src == nil || !ok {
			continue
		}
		if dst >= 0 && g.nodes[dst].takesPayload {
			errs = append(errs, fmt.Errorf("%s: %s takes a Send payload, which an edge cannot give; reach it with graph.Send from a fan-out edge or a Command", what, e[1]))
			continue
		}
		if !slices.Contains(src.succ, dst) {
			src.succ = append(src.succ, dst)
		}
	}
	for _, c := range b.conds {
		what := fmt.Sprintf("conditional edge from %s", c.from)
		src := from(c.from, what)
		if len(c.paths) == 0 {
			errs = append(errs, fmt.Errorf("%s: the path map is empty; map each route key to a node or END", what))
			continue
		}
		cc := &ccond{route: c.route, paths: map[string]int{}, keys: slices.Sorted(maps.Keys(c.paths))}
		for _, k := range cc.keys {
			pw := fmt.Sprintf("%s, path %q", what, k)
			if dst, ok := resolve(c.paths[k], pw, true); ok {
				if dst >= 0 && g.nodes[dst].takesPayload {
					errs = append(errs, fmt.Errorf("%s: %s takes a Send payload, which a conditional edge cannot give; return graph.Send targets from a fan-out edge", pw, c.paths[k]))
					continue
				}
				cc.paths[k] = dst
			}
		}
		if src != nil {
			src.conds = append(src.conds, cc)
		}
	}
	for _, f := range b.fans {
		what := fmt.Sprintf("fan-out edge from %s", f.from)
		src := from(f.from, what)
		if len(f.dests) == 0 {
			errs = append(errs, fmt.Errorf("%s: declare the nodes it may target", what))
			continue
		}
		cf := &cfan{fan: f.fan, dests: map[string]int{}}
		for _, d := range f.dests {
			if dst, ok := resolve(d, what, true); ok {
				cf.dests[d] = dst
			}
		}
		if src != nil {
			src.fans = append(src.fans, cf)
		}
	}
	for _, j := range b.joins {
		what := fmt.Sprintf("join into %s", j.to)
		if j.to == END {
			errs = append(errs, fmt.Errorf("%s: a join cannot end the run (the run ends when no node is left to run); add an edge from each of %v to END, or join into a node that goes to END", what, j.from))
			continue
		}
		to, ok := resolve(j.to, what, false)
		if len(j.from) == 0 {
			errs = append(errs, fmt.Errorf("%s: no source nodes", what))
			continue
		}
		if ok && g.nodes[to].takesPayload {
			errs = append(errs, fmt.Errorf("%s: %s takes a Send payload, which a join cannot give", what, j.to))
			ok = false
		}
		cj := &cjoin{to: to}
		valid := ok
		for _, f := range j.from {
			if f == START {
				errs = append(errs, fmt.Errorf("%s: START cannot be a join source; the input starts every node with an edge from START", what))
				valid = false
				continue
			}
			i, fok := resolve(f, what, false)
			switch {
			case !fok:
				valid = false
			case slices.Contains(cj.from, i):
				errs = append(errs, fmt.Errorf("%s: source %q is listed twice", what, f))
				valid = false
			default:
				cj.from = append(cj.from, i)
			}
		}
		if !valid {
			continue
		}
		for at, f := range cj.from {
			g.nodes[f].joins = append(g.nodes[f].joins, len(g.joins))
			g.nodes[f].joinAt = append(g.nodes[f].joinAt, at)
		}
		g.joins = append(g.joins, cj)
	}
	for _, n := range g.nodes {
		if len(n.dests) == 0 {
			continue
		}
		n.gotos = map[string]int{}
		for _, d := range n.dests {
			if i, ok := resolve(d, fmt.Sprintf("goto destination of %s", n.name), true); ok {
				n.gotos[d] = i
			}
		}
	}

	errs = append(errs, g.checkShape()...)
	if len(errs) > 0 {
		name := "graph"
		if b.name != "" {
			name = fmt.Sprintf("graph %q", b.name)
		}
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = "  - " + e.Error()
		}
		return nil, &CompileError{Problems: errs, msg: fmt.Sprintf("%s does not compile:\n%s", name, strings.Join(lines, "\n"))}
	}
	return g, nil
}

// checkShape reports a missing entry, dangling nodes and unreachable nodes.
func (g *Graph) checkShape() []error {
	var errs []error
	if len(g.start.succ)+len(g.start.conds)+len(g.start.fans) == 0 {
		errs = append(errs, errors.New("no entry point: add an edge from graph.START (b.SetEntry(node))"))
	}
	for _, n := range g.nodes {
		if len(n.succ)+len(n.conds)+len(n.fans)+len(n.joins)+len(n.gotos) == 0 {
			errs = append(errs, fmt.Errorf("node %q has no outgoing edge: add b.AddEdge(%q, graph.END) or declare its Goto targets with graph.Destinations", n.name, n.name))
		}
	}
	seen := make([]bool, len(g.nodes))
	stack := []*cnode{g.start}
	visit := func(i int) {
		if i >= 0 && !seen[i] {
			seen[i] = true
			stack = append(stack, g.nodes[i])
		}
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range n.succ {
			visit(s)
		}
		for _, c := range n.conds {
			for _, d := range c.paths {
				visit(d)
			}
		}
		for _, f := range n.fans {
			for _, d := range f.dests {
				visit(d)
			}
		}
		for _, d := range n.gotos {
			visit(d)
		}
		for _, j := range n.joins {
			visit(g.joins[j].to)
		}
	}
	var unreached []string
	for i, ok := range seen {
		if !ok {
			unreached = append(unreached, g.nodes[i].name)
		}
	}
	if len(unreached) > 0 {
		errs = append(errs, fmt.Errorf("no path from START reaches %q: connect them or remove them", unreached))
	}
	return errs
}

// CompileError lists every problem Compile found.
type CompileError struct {
	Problems []error
	msg      string
}

func (e *CompileError) Error() string { return e.msg }

// Unwrap returns the individual problems.
func (e *CompileError) Unwrap() []error { return e.Problems }

// suggest returns a "did you mean" hint for a mistyped node name.
func suggest(name string, known map[string]int) string {
	best, bestD := "", 3
	for k := range known {
		if d := editDistance(name, k); d < bestD || (d == bestD && best != "" && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// WithOptions returns the graph with more default run options, applied
// after those given to Compile and before those given to a run: for code
// that receives a compiled graph and the options meant for its runs (an
// app's step limit, say) and must hand on one graph. The copy shares the
// compiled graph; g is unchanged.
func (g *Graph) WithOptions(opts ...RunOption) *Graph {
	c := *g
	c.defaults = append(slices.Clone(g.defaults), opts...)
	return &c
}
