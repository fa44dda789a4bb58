// Package deep builds a deep agent: a react loop that plans, keeps files,
// delegates and learns skills, made only of the parts Trellis already has
// (agent/react, agent/middleware, tool, store, graph).
//
//	g, err := deep.New(deep.Config{
//		Model:        model,
//		Instructions: "You research topics and write reports.",
//		SubAgents:    []deep.SubAgent{{Name: "critic", Description: "Reviews a draft.", System: "..."}},
//		Skills:       skills, // deep.LoadSkills(os.DirFS("skills"), ".")
//		Policy:       tool.Policy{deep.WriteFileTool: tool.RequireApproval()},
//	})
//	res, err := g.Invoke(ctx, deep.Input("Write a report on ..."),
//		graph.WithStore(st), graph.WithCheckpointer(saver), graph.WithThread(id))
//
// Its parts are middleware and tools, each usable on its own in any react
// agent:
//
//   - Planning: the write_todos tool; the model rewrites its to-do list
//     (items with content and status), kept in the Todos key of the
//     thread's state.
//   - Files: a virtual filesystem over the run's store (graph.WithStore),
//     per thread or shared, with the tools ls, read_file (numbered lines,
//     offset and limit), write_file, edit_file (exact, unique
//     replacement), grep and glob; every output is bounded.
//   - The task tool: hands a task to a named sub-agent or the
//     general-purpose one, which runs as a nested run of the thread with
//     a fresh context (only the task goes in, only its final answer comes
//     back); its approvals stop the deep agent's run and resume it.
//   - Background sub-agents (Config.AsyncSubAgents, Async): assistants on
//     a LangGraph-API server the model starts, checks, updates and
//     cancels with start_async_task and its siblings, kept in AsyncTasks.
//   - Skills: folders with a SKILL.md (front matter name and
//     description); only the names and descriptions are in the prompt,
//     and load_skill gives the model the instructions of the one it
//     chooses.
//   - Summarization: past a token threshold the older messages are
//     written to a file and folded into a running summary that names it.
//   - Repair: tool calls left without results (an abandoned approval) get
//     a result saying they did not run, before any other middleware sees
//     the request.
//
// Approvals use the tool approval policy (Config.Policy).
package deep
