// The one-node graph LangGraph's JS dev server serves in the side-by-side
// benchmark: it answers the last message with an echo of it, like
// examples/servegraphs' "echo" graph.
import { AIMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";

function reply(state) {
  const last = state.messages[state.messages.length - 1];
  const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
  return { messages: [new AIMessage(`You said: ${text}`)] };
}

/** graph is the compiled echo graph, registered as "echo" in langgraph.json. */
export const graph = new StateGraph(MessagesAnnotation)
  .addNode("reply", reply)
  .addEdge("__start__", "reply")
  .addEdge("reply", "__end__")
  .compile();
