// Package graph is Trellis's graph engine: typed shared state, nodes and
// edges, and a superstep runtime that runs them deterministically, streams
// what happens, and checkpoints after every step.
//
// # State
//
// State is a set of typed keys declared once, each with a reducer:
//
//	var (
//		Messages = graph.NewKey("messages", graph.MergeByID[Msg]())
//		Plan     = graph.NewKey[*Plan]("plan")              // last value wins
//		Results  = graph.NewKey("results", graph.MergeMap[string, string]())
//	)
//
// Nodes read keys with Key.Get and return writes (Key.Set, Append, Remove,
// DeleteKeys, Key.Overwrite). Writes are data, not closures, so a task's
// writes can be saved before its step commits. Every key has a version that
// grows by one in each step that writes it.
//
// # Supersteps
//
// A run applies its input as step 0, then executes supersteps until no task
// is left:
//
//   - every task ready for the step runs in parallel against the same frozen
//     snapshot of the state;
//   - when all have finished, their writes are applied in task order: tasks
//     triggered by edges first, in node-name order, then tasks started by
//     Send, in the order of the Sends; never in finish order;
//   - a conditional or fan-out edge is evaluated when its node finishes,
//     against the snapshot plus that node's own writes;
//   - the first task that fails cancels its siblings, and the step's writes
//     are discarded; the run fails with a *NodeError;
//   - after the writes, the next step's tasks are planned from the finished
//     tasks' edges, values and updates events are sent, and a checkpoint is
//     saved when the run has a checkpointer.
//
// A node triggered by several edges in one step runs once. A join edge
// (AddJoin) runs its target once after all of its sources finished, in any
// steps. A deferred node (Deferred) runs when nothing else is pending.
//
// # Routing
//
// Nodes return an Update, a Command, or nil. A Command's Goto replaces the
// node's edges for that run (see Command); its targets must be declared with
// Destinations. Send starts one task per item, each with its own payload,
// read by a node added with AddSendNode.
//
// # Limits
//
// A run executes at most its step limit (WithStepLimit, DefaultStepLimit by
// default) of supersteps; RemainingSteps tells a node how many remain. Run
// and node timeouts, cancellation, retries (WithRetry) and pause, resume and
// abort (Control) all go through context.Context.
//
// # Streaming
//
// Stream yields Events of the kinds asked for with WithEvents. Every event
// carries its step, node, task ID and subgraph namespace. Breaking out of the
// range loop cancels the run. Invoke runs without events.
package graph
