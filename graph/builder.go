package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// START and END are the pseudo-nodes where a run begins and a branch ends.
const (
	START = "__start__"
	END   = "__end__"
)

// NodeFunc is a node: it reads the step's frozen snapshot and returns its
// writes (an Update), a Command, or nil. Its context carries the run: see
// RemainingSteps, Emit, Messages, StoreFrom, TaskID and Namespace.
type NodeFunc func(ctx context.Context, s State) (Output, error)

// RouteFunc chooses one branch of a conditional edge by returning a key of
// its path map. It sees the step's snapshot plus its own node's writes.
type RouteFunc func(ctx context.Context, s State) (string, error)

// FanoutFunc chooses the targets of a fan-out edge: nodes (To) and nodes with
// payloads (Send). Like a RouteFunc, it sees the snapshot plus its own node's
// writes.
type FanoutFunc func(ctx context.Context, s State) ([]Target, error)

type nodeSpec struct {
	name           string
	run            func(ctx context.Context, s State, payload any) (Output, error)
	takesPayload   bool
	acceptsPayload func(any) bool
	payloadType    string
	encodePayload  func(any) ([]byte, error)
	decodePayload  func([]byte) (any, error)
	dests          []string
	deferred       bool
	retry          retryPolicies
	timeout        time.Duration
	sub            *Graph
	stateful       bool
	cache          *CachePolicy
}

// NodeOption configures a node when it is added.
type NodeOption interface{ applyNode(*nodeSpec) }

type nodeOptionFunc func(*nodeSpec)

func (f nodeOptionFunc) applyNode(n *nodeSpec) { f(n) }

// Destinations declares the nodes a node's Command may Goto (END included).
// Compile counts them as edges for reachability and Mermaid; a Goto to any
// other node fails the run.
func Destinations(nodes ...string) NodeOption {
	return nodeOptionFunc(func(n *nodeSpec) { n.dests = append(n.dests, nodes...) })
}

// Deferred makes a node wait until nothing else is pending: once triggered,
// it runs in the first step in which no other task is ready. Use it for a
// final aggregation after branches of different lengths.
func Deferred() NodeOption { return nodeOptionFunc(func(n *nodeSpec) { n.deferred = true }) }

// WithRetry retries the node as the policies say. Nodes are not retried
// unless a policy is set. With several policies (given at once or by
// several WithRetry options, in order), a failed attempt is retried by the
// first policy whose RetryOn accepts the error (IsTransient for a policy
// without one), with that policy's limits and backoff; the attempt count is
// the task's, across policies. A node reads its attempt with Attempt.
func WithRetry(policies ...RetryPolicy) NodeOption {
	return nodeOptionFunc(func(n *nodeSpec) {
		for _, p := range policies {
			n.retry = append(n.retry, p)
		}
	})
}

// Timeout bounds each attempt of the node; the node's context is cancelled
// when it expires and the attempt fails with context.DeadlineExceeded.
func Timeout(d time.Duration) NodeOption {
	return nodeOptionFunc(func(n *nodeSpec) { n.timeout = d })
}

type condEdge struct {
	from  string
	route RouteFunc
	paths map[string]string
}

type fanEdge struct {
	from  string
	fan   FanoutFunc
	dests []string
}

type joinEdge struct {
	to   string
	from []string
}

// Builder assembles a graph. Add nodes and edges, then Compile; Compile
// reports every problem at once. A Builder is not safe for concurrent use.
type Builder struct {
	name   string
	keys   []AnyKey
	nodes  []*nodeSpec
	edges  [][2]string
	conds  []condEdge
	fans   []fanEdge
	joins  []joinEdge
	errs   []error
	byName map[string]*nodeSpec
}

// New starts a graph whose state has these keys. Every key a node reads or
// writes must be listed.
func New(keys ...AnyKey) *Builder {
	return &Builder{keys: keys, byName: map[string]*nodeSpec{}}
}

// SetName names the graph in errors and Mermaid output.
func (b *Builder) SetName(name string) { b.name = name }

func (b *Builder) add(n *nodeSpec, opts []NodeOption) {
	for _, o := range opts {
		o.applyNode(n)
	}
	switch {
	case n.name == "":
		b.errs = append(b.errs, fmt.Errorf("a node has an empty name"))
		return
	case n.name == START || n.name == END:
		b.errs = append(b.errs, fmt.Errorf("node name %q is reserved", n.name))
		return
	case b.byName[n.name] != nil:
		b.errs = append(b.errs, fmt.Errorf("node %q is added twice", n.name))
		return
	}
	b.byName[n.name] = n
	b.nodes = append(b.nodes, n)
}

// AddNode adds a node.
func (b *Builder) AddNode(name string, fn NodeFunc, opts ...NodeOption) {
	if fn == nil {
		b.errs = append(b.errs, fmt.Errorf("node %q has a nil function", name))
		return
	}
	b.add(&nodeSpec{name: name, run: func(ctx context.Context, s State, _ any) (Output, error) {
		return fn(ctx, s)
	}}, opts)
}

// AddSendNode adds a node that receives a payload from Send. Each Send to it
// starts one task with that payload. Triggering it by an edge is an error at
// run time (there is no payload to give it).
func AddSendNode[T any](b *Builder, name string, fn func(ctx context.Context, s State, payload T) (Output, error), opts ...NodeOption) {
	if fn == nil {
		b.errs = append(b.errs, fmt.Errorf("node %q has a nil function", name))
		return
	}
	var zero T
	b.add(&nodeSpec{
		name:         name,
		takesPayload: true,
		acceptsPayload: func(p any) bool {
			_, ok := p.(T)
			return ok
		},
		payloadType: fmt.Sprintf("%T", zero),
		run: func(ctx context.Context, s State, p any) (Output, error) {
			return fn(ctx, s, p.(T))
		},
		encodePayload: func(p any) ([]byte, error) { return json.Marshal(p.(T)) },
		decodePayload: func(data []byte) (any, error) {
			var v T
			err := json.Unmarshal(data, &v)
			return v, err
		},
	}, opts)
}

// AddSubgraph adds a compiled graph as a node. The subgraph starts from the
// values of the keys it shares with this graph (the same *Key in both
// schemas) and its writes to those keys become the node's writes, replayed
// through this graph's reducers in the order the subgraph made them (a
// last-value key contributes its final value once). Keys only the subgraph
// has stay inside it. Its events, errors and task IDs carry the namespace
// "node:taskID".
func (b *Builder) AddSubgraph(name string, g *Graph, opts ...NodeOption) {
	if g == nil {
		b.errs = append(b.errs, fmt.Errorf("subgraph node %q has a nil graph", name))
		return
	}
	n := &nodeSpec{name: name, sub: g}
	n.run = func(ctx context.Context, s State, _ any) (Output, error) { return runSubgraph(ctx, g, s) }
	b.add(n, opts)
}

// Stateful makes a subgraph node (AddSubgraph) keep its own state per
// thread across invocations: each time the parent runs the node, the
// subgraph starts from the state its previous invocation ended with (its
// private keys remembered, the keys it shares with the parent taken from
// the parent) and runs from START; an invocation that stopped at an
// interrupt, or in a crash, is resumed where it stopped when the parent
// resumes that same task. Its checkpoints live in one namespace, the node's
// name. Without it (the default) every invocation starts fresh in a
// namespace of its own. A Stateful subgraph node must not run twice in one
// step.
//
// Its state follows the parent's branch. When a root run travels back in
// time — replays from a checkpoint that is not the thread's latest
// (WithCheckpointID with a nil input), runs new input or a command from
// one, or runs from a fork that UpdateState made of an older checkpoint —
// the first invocation of each Stateful subgraph in that run starts from
// the state the subgraph had at that point of the thread (its namespace's
// latest checkpoint saved before the checkpoint the branch leaves from;
// nothing if it had not run yet) as a new invocation, not from its newest
// state, which may belong to the abandoned branch; the branch's later
// invocations go on from the branch's own. A run that answers an interrupt
// (WithResume, WithResumeMap) resumes the subgraph where it stopped
// instead. This is LangGraph's rule for subgraphs on replay.
func Stateful() NodeOption { return nodeOptionFunc(func(n *nodeSpec) { n.stateful = true }) }

// AddEdge adds a static edge: when from finishes, to runs in the next step.
// If several nodes with edges to the same node finish in one step, it runs
// once; if they finish in different steps, it runs once after each (use
// AddJoin to wait for all of them).
func (b *Builder) AddEdge(from, to string) { b.edges = append(b.edges, [2]string{from, to}) }

// SetEntry is AddEdge(START, node).
func (b *Builder) SetEntry(node string) { b.AddEdge(START, node) }

// AddJoin adds a join edge: to runs once after every node in from has
// finished (in any steps) since to last ran by this join.
func (b *Builder) AddJoin(to string, from ...string) {
	b.joins = append(b.joins, joinEdge{to: to, from: from})
}

// AddConditionalEdges adds a conditional edge: when from finishes, route
// returns a key of paths, and the node that key maps to (or END) runs next.
// A key missing from paths fails the run with an error listing the valid
// keys.
func (b *Builder) AddConditionalEdges(from string, route RouteFunc, paths map[string]string) {
	if route == nil {
		b.errs = append(b.errs, fmt.Errorf("conditional edge from %q has a nil route function", from))
		return
	}
	b.conds = append(b.conds, condEdge{from: from, route: route, paths: paths})
}

// AddFanout adds a fan-out edge: when from finishes, fan returns the targets
// to run next, each a node (To) or a node with a payload (Send). dests
// declares every node fan may name; any other target fails the run.
func (b *Builder) AddFanout(from string, fan FanoutFunc, dests ...string) {
	if fan == nil {
		b.errs = append(b.errs, fmt.Errorf("fan-out edge from %q has a nil function", from))
		return
	}
	b.fans = append(b.fans, fanEdge{from: from, fan: fan, dests: dests})
}
