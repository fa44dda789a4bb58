package deep

import (
	"encoding/json"
	"regexp"
	"strings"

	agentdeep "github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// The scripted model's texts and files, which the eval set checks.
const (
	// Notes is the file the researcher writes.
	Notes = ResearchDir + "notes.md"
	// NotesText is its content.
	NotesText = "# Tea and coffee for the office kitchen\n\n" +
		"- Caffeine: a cup of brewed coffee has about 95 mg, a cup of black tea about 47 mg.\n" +
		"- Cost: coffee beans come to about 0.30 a cup, tea bags to about 0.10 a cup.\n" +
		"- Preference: in the last kitchen survey 14 people asked for coffee and 11 for tea.\n"
	// ResearchAnswer is the researcher's final answer, all the deep agent
	// sees of its work.
	ResearchAnswer = "Saved the figures to " + Notes + ": coffee has about twice the caffeine of tea (95 mg against 47 mg a cup) and costs three times as much (0.30 against 0.10 a cup); the last survey split 14 for coffee and 11 for tea."
	// Brief is the file the agent writes, after the person approves.
	Brief = "/brief.md"
	// BriefText is its content.
	BriefText = "# Tea or coffee for the office kitchen\n\n" +
		"**Stock both, with tea as the everyday default.**\n\n" +
		"- Demand is split: 14 people asked for coffee, 11 for tea.\n" +
		"- Tea costs a third as much a cup (0.10 against 0.30).\n" +
		"- Tea has half the caffeine (47 mg against 95 mg), a gentler afternoon choice.\n\n" +
		"Sources: " + Notes + "\n"
	// DeliveredText is the final answer when the brief was saved.
	DeliveredText = "The brief is saved in /brief.md: stock both, with tea as the everyday default (a third of the cost a cup, half the caffeine) and coffee for the 14 who asked for it. The research notes are in " + Notes + "."
	// NotSavedText is the final answer when the person rejected the write.
	NotSavedText = "Nothing was saved: you rejected writing the brief to /brief.md. My recommendation stands (stock both, tea as the default); the research notes are in " + Notes + "."
	// Scope is the reply to a request outside the scenario.
	Scope = "I am the deep agent's scripted demo model, so I can play only one scenario: writing a brief on tea or coffee for the office kitchen " +
		"(I plan it as a to-do list, load my brief-writing skill, have a researcher sub-agent save notes, and ask you before saving /brief.md). " +
		"A real model can do more (--model, or OPENAI_API_KEY). Try: \"" + Task + "\""
)

// The to-do lists the agent writes as it goes.
var plans = [][]agentdeep.Todo{
	{{Content: "Load the brief-writing skill", Status: agentdeep.TodoInProgress}, {Content: "Research tea and coffee (researcher sub-agent)", Status: agentdeep.TodoPending}, {Content: "Write the brief to /brief.md", Status: agentdeep.TodoPending}},
	{{Content: "Load the brief-writing skill", Status: agentdeep.TodoCompleted}, {Content: "Research tea and coffee (researcher sub-agent)", Status: agentdeep.TodoInProgress}, {Content: "Write the brief to /brief.md", Status: agentdeep.TodoPending}},
	{{Content: "Load the brief-writing skill", Status: agentdeep.TodoCompleted}, {Content: "Research tea and coffee (researcher sub-agent)", Status: agentdeep.TodoCompleted}, {Content: "Write the brief to /brief.md", Status: agentdeep.TodoInProgress}},
	{{Content: "Load the brief-writing skill", Status: agentdeep.TodoCompleted}, {Content: "Research tea and coffee (researcher sub-agent)", Status: agentdeep.TodoCompleted}, {Content: "Write the brief to /brief.md", Status: agentdeep.TodoCompleted}},
}

// scenario matches the requests the demo plays (an empty one is the
// sample request).
var scenario = regexp.MustCompile(`(?i)^\s*$|\btea\b|coffee`)

// Script returns the scripted model. Each reply is chosen by what the
// request holds — whether the deep agent or its researcher asks, and how
// many tool results follow the last user message — never by how many
// requests came before, so any number of threads get the same replies.
func Script() llm.Model {
	m := llmtest.New()
	agent, researcher := llmtest.Not(inSubAgent), inSubAgent
	m.When(llmtest.And(agent, func(r *llmtest.Request) bool { return !scenario.MatchString(r.LastUser()) }), llmtest.Text(Scope)).Repeat()
	call := func(name string, args any) llmtest.Turn {
		b, _ := json.Marshal(args)
		return llmtest.ToolCalls(llmtest.Call(name, string(b)))
	}
	todos := func(i int) llmtest.Turn { return call(agentdeep.TodosTool, map[string]any{"todos": plans[i]}) }
	steps := []llmtest.Turn{
		todos(0),
		call(agentdeep.SkillTool, map[string]string{"name": "brief-writing"}),
		todos(1),
		call(agentdeep.TaskTool, map[string]string{"subagent_type": "researcher",
			"description": "Find how tea and coffee compare for an office kitchen: caffeine per cup, cost per cup, and what the last kitchen survey said. Save the figures to " + Notes + "."}),
		call(agentdeep.ReadFileTool, map[string]string{"path": Notes}),
		todos(2),
		call(agentdeep.WriteFileTool, map[string]string{"path": Brief, "content": BriefText}),
	}
	for i, t := range steps {
		m.When(llmtest.And(agent, results(i)), t).Repeat()
	}
	n := len(steps)
	m.When(llmtest.And(agent, results(n), lastFailed), llmtest.Text(NotSavedText)).Repeat()
	m.When(llmtest.And(agent, results(n)), todos(3)).Repeat()
	m.When(llmtest.And(agent, results(n+1)), llmtest.Text(DeliveredText)).Repeat()
	m.When(llmtest.And(researcher, results(0)), call(agentdeep.WriteFileTool, map[string]string{"path": Notes, "content": NotesText})).Repeat()
	m.When(llmtest.And(researcher, results(1)), llmtest.Text(ResearchAnswer)).Repeat()
	m.Otherwise(llmtest.Text(Scope))
	return m
}

// inSubAgent matches the researcher's requests, by its system prompt
// (a nested run of the task tool's call; the namespace alone would not
// tell it from the agent when the app itself runs nested).
func inSubAgent(r *llmtest.Request) bool { return strings.HasPrefix(r.System(), researcherPrompt) }

// results matches a request with n tool results after its last user
// message.
func results(n int) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		c := 0
		for _, m := range r.Messages {
			switch m.Role {
			case llm.RoleUser:
				c = 0
			case llm.RoleTool:
				c++
			}
		}
		return c == n
	}
}

// lastFailed matches a request whose last message is a tool error (a
// rejected call).
func lastFailed(r *llmtest.Request) bool {
	return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == llm.RoleTool && r.Messages[len(r.Messages)-1].IsError
}
