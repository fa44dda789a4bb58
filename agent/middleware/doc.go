// Package middleware wraps an agent's model calls, tool calls and turns in
// a chain declared in order.
//
// A Middleware is a named value that implements one or more of the hook
// interfaces:
//
//   - ModelWrapper sees and changes a model request (messages, tools,
//     settings, system prompt, even the model), calls next zero or more
//     times (short-circuit, retry, fallback) and sees and changes the
//     response;
//   - StreamWrapper sees and changes the chunks of a streamed reply
//     before they reach the graph's message stream;
//   - ToolWrapper sees and changes a tool call's arguments, refuses it, or
//     replaces its result;
//   - BeforeTurner and AfterTurner run once per agent turn: before the
//     first model call after a user message, and after the reply that
//     answers it.
//
// Middleware wraps calls; it does not own state. What must survive a
// crash or an interrupt is written to graph state (ModelCall.Write,
// ToolResult.Writes, Turn.Write; keys declared by Stateful) or to the
// store, never kept in the middleware's memory.
//
// Order is declared: the first middleware of a Chain is the outermost. Its
// WrapModel and WrapTool see the request first and the response last;
// BeforeTurn hooks run in chain order and AfterTurn hooks in reverse
// order, as deferred calls do.
//
// Agents build their handlers once (Chain.WrapModel, Chain.WrapTool), so
// a call through the chain allocates nothing of the chain's own.
package middleware
