// Package agent is the parent of Trellis's prebuilt agents, each a
// subpackage that returns an ordinary compiled graph.Graph, so an agent can
// be run on its own, added to a larger graph as a subgraph, or invoked from
// a node or a tool:
//
//   - agent/react: a model that calls tools in a loop until it answers
//     (parallel calls, approval of write tools through interrupts, a
//     graceful final answer when the step budget runs low, an optional
//     structured answer).
//   - agent/router: a router model whose tools include sub-agents (any
//     compiled graph, run nested with its own namespace and interrupts),
//     with direct "@agent" routes, terminal tools, call-chain references
//     ({{call:ID}}), error patterns, ask_human and a deadline.
//   - agent/builder: a fluent builder of agents made of LLM nodes (each a
//     react loop) joined by edges whose conditions, in plain language, a
//     model judges; a running handle with status, pause, resume and abort.
//   - agent/planexec: plan, ask and confirm, then run the plan's steps as
//     a DAG in parallel levels with replanning, and deliver a summary.
//
// Agents never import provider packages or vendor SDKs: give them any
// llm.Model (a provider's, or llmtest's scripted model in tests).
package agent
