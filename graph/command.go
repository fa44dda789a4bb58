package graph

import "fmt"

// Command is a node output that writes an update and chooses where the run
// goes next.
//
// Goto replaces the node's edges: when Goto is non-empty, the node's static,
// conditional, fan-out and join edges are not followed for this run of the
// node; only the Goto targets run next. (LangGraph adds goto targets to the
// static edges instead, which its users find surprising: a node that routes
// itself should not also trigger the edges it routed around.) An empty Goto
// follows the node's edges as an Update would. Every Goto target must be
// declared on the node with Destinations; any other target fails the run.
type Command struct {
	Goto   []Target
	Update Update
}

func (Command) output() {}

// Target is a destination of a Command's Goto or of a fan-out edge: a node
// (To) or a node with its own payload (Send).
type Target struct {
	node    string
	payload any
	send    bool
}

// To targets a node by name; END ends this branch.
func To(node string) Target { return Target{node: node} }

// Send targets a node with a payload of its own: the node runs once per
// Send, in the next step, reading the payload as the argument of a function
// added with AddSendNode. Use Send for map-reduce: one task per item, each
// writing its result into a reducer key. Tasks started by Send run after the
// edge-triggered tasks of the step, in the order of their Sends.
func Send[T any](node string, payload T) Target {
	return Target{node: node, payload: payload, send: true}
}

// Node returns the target node's name.
func (t Target) Node() string { return t.node }

// String formats the target for logs and errors.
func (t Target) String() string {
	if t.send {
		return fmt.Sprintf("Send(%s, %v)", t.node, t.payload)
	}
	return t.node
}
