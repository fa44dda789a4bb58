package graph

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// NodeError is the error of a run whose task failed. It names the node, the
// task, the subgraph namespace and the step; Unwrap gives the node's error.
type NodeError struct {
	Node      string
	TaskID    string
	Namespace string
	Step      int
	Err       error
}

func (e *NodeError) Error() string {
	where := fmt.Sprintf("node %q", e.Node)
	if e.Namespace != "" {
		where += fmt.Sprintf(" in subgraph %q", e.Namespace)
	}
	return fmt.Sprintf("graph: %s failed at step %d (task %s): %v", where, e.Step, e.TaskID, e.Err)
}

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

// PanicError is a node panic turned into an error; the run fails with it
// instead of crashing the process.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// NodeCount is how many times a node ran.
type NodeCount struct {
	Node string
	Runs int
}

// StepLimitError is the error of a run that reached its step limit without
// finishing. Repeating lists the nodes that ran more than once, most often
// first: usually the loop that never met its exit condition.
type StepLimitError struct {
	Limit     int
	Namespace string
	Repeating []NodeCount
	// Next lists the nodes that would have run next.
	Next []string
}

func (e *StepLimitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph: step limit of %d reached", e.Limit)
	if e.Namespace != "" {
		fmt.Fprintf(&b, " in subgraph %q", e.Namespace)
	}
	fmt.Fprintf(&b, " with %q still to run", e.Next)
	if len(e.Repeating) > 0 {
		parts := make([]string, len(e.Repeating))
		for i, c := range e.Repeating {
			parts[i] = fmt.Sprintf("%s ×%d", c.Node, c.Runs)
		}
		fmt.Fprintf(&b, "; these nodes kept repeating: %s", strings.Join(parts, ", "))
	}
	b.WriteString(". If the loop should end, check its exit condition; if it needs more steps, raise the limit with graph.WithStepLimit(n)")
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
