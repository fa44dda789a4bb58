// Package agent is the parent of Trellis's prebuilt agents, each a
// subpackage that returns an ordinary compiled graph.Graph, so an agent can
// be run on its own, added to a larger graph as a subgraph, or invoked from
// a node or a tool:
//
//   - agent/react: a model that calls tools in a loop until it answers
//     (parallel calls, approval of write tools through interrupts, a
//     graceful final answer when the step budget runs low, an optional
//     structured answer).
//
// Agents never import provider packages or vendor SDKs: give them any
// llm.Model (a provider's, or llmtest's scripted model in tests).
package agent
