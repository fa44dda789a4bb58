package planexec

// The default instructions of each phase (see Prompts). The agent adds
// what each request needs after them: the JSON shape of a contract, the
// tools steps can use, a step's dependencies and their results.
const (
	DefaultIntentPrompt = "Decide whether the user's last message is chat or a task. " +
		"Chat is small talk or a question you can answer at once from what you know, with no tools and no steps. " +
		"A task needs work: looking things up, using tools, producing something in several steps. " +
		"When unsure, it is a task. Reply with one JSON object: " +
		`{"intent": "chat" or "task", "reply": your answer to the user when it is chat, or "" for a task}.`

	DefaultPlanPrompt = "You plan tasks for an agent that carries out each step with tools. " +
		"Assess the task, then reply with one JSON object: its complexity (simple, moderate or complex), " +
		"the task in a sentence, the steps (each with a short unique id, a title, a description of what to do, " +
		"the ids it depends_on, and done_when: how to tell it is complete) and replan: the ids of steps whose " +
		"results may change the rest of the plan (often none). Steps that do not depend on each other run in " +
		"parallel; a step sees the results of the steps it depends on. Keep plans short: as few steps as the task needs."

	DefaultDeepPlanPrompt = "The task is complex. Think it through and give the full plan as one JSON object " +
		"(task, steps, replan), improving the draft below: check that every step is needed, that dependencies " +
		"are right and minimal so independent work runs in parallel, and that done_when is concrete."

	DefaultStepPrompt = "You carry out one step of a larger plan. Do this step only, using the tools you need, " +
		"then reply with the step's result: what you found or did, with the details later steps will need. " +
		"If something blocks the step, say what and why."

	DefaultDirectPrompt = "Carry out the user's task, using the tools you need, then give the result."

	DefaultReplanPrompt = "You revise a plan while it runs. Some steps are finished; their results are below. " +
		"Reply with one JSON object (task, steps, replan) holding the steps still to do: keep, change, drop or add " +
		"steps as the results suggest. Do not repeat finished steps: they never run again, and new steps may " +
		"depend on them by id."

	DefaultDeliverPrompt = "The plan has run. Write the final answer for the user from the step results below: " +
		"answer what they asked, plainly, and say what could not be done and why."
)
