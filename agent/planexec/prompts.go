package planexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"text/template"
)

// Prompts holds the instructions of each phase; an empty field keeps the
// default (the Default* constants). Each is a text/template executed with
// a PromptData (the fields each phase fills are listed below; the others
// are zero), so a prompt can name the tools, the step, the task:
//
//	Prompts{Step: "You are {{.Name}}'s executor. Tools:\n{{.Tools}}Do one step, then report."}
//
// Config.System is added after each, and the agent adds what a request
// needs to work after that: the JSON shape of a contract, the tool
// catalogue and the ask rule while planning, a step's result for the
// judge. A template that does not parse, or fails on sample data, is
// reported by New; one that fails at run time is logged and the default
// is used instead.
type Prompts struct {
	// Intent classifies the input as chat or task (DefaultIntentPrompt).
	// Fields: Name, Tools, AskTool, MaxAsks.
	Intent string
	// Plan is the quick assessment and plan (DefaultPlanPrompt). Fields:
	// Name, Tools, AskTool, MaxAsks, Asked.
	Plan string
	// DeepPlan is the deeper planning of complex tasks
	// (DefaultDeepPlanPrompt). Fields: Name, Tools, Task (the draft's).
	DeepPlan string
	// Step is the system prompt of every step's ReAct loop
	// (DefaultStepPrompt). Fields: Name, Tools, AskTool.
	Step string
	// StepTask is the message that starts one step's loop
	// (DefaultStepTaskPrompt). Fields: Name, Tools, Task, Steps (the
	// plan's), Step, Results (of the steps it depends on, in order).
	StepTask string
	// Direct is a task run without a plan (DefaultDirectPrompt). Fields:
	// Name, Tools, AskTool.
	Direct string
	// Replan revises the plan after a step named in replan
	// (DefaultReplanPrompt). Fields: Name, Tools, Task, Steps, Results
	// (every step's, finished or not).
	Replan string
	// Deliver writes the final summary (DefaultDeliverPrompt). Fields:
	// Name, Task, Steps, Results.
	Deliver string
	// Judge checks a step's result against its done_when
	// (DefaultJudgePrompt). Fields: Name, Task, Step.
	Judge string
	// Unavailable is the reply when the intent check's model fails
	// (DefaultUnavailablePrompt): the turn ends with it and the thread
	// takes the next message as usual. Fields: Name, Error.
	Unavailable string
}

// PromptData is what a prompt template can use. Which fields a phase
// fills is listed with each field of Prompts.
type PromptData struct {
	// Name is Config.Name.
	Name string
	// Tools lists the tools steps can use, one "- name: description" line
	// each.
	Tools string
	// AskTool is the ask tool's name (AskToolName) and MaxAsks the most
	// questions the planner may ask; Asked counts those asked so far.
	AskTool string
	MaxAsks int
	Asked   int
	// Task is the current plan's task.
	Task string
	// Steps are the current plan's steps.
	Steps []Step
	// Step is the step at hand (StepTask, Judge).
	Step Step
	// Results are step outcomes (see each phase).
	Results []StepReport
	// Error is the model's failure (Unavailable).
	Error string
}

// StepReport is one step's outcome, for prompt templates.
type StepReport struct {
	ID, Title string
	// Status is "" for a step that has not run.
	Status StepStatus
	// Result, Error, Budget, Check and Undone are the StepResult's.
	Result, Error, Budget, Check string
	Undone                       []CallOutcome
}

// DefaultStepTaskPrompt starts a step's loop: the task, the plan, the step
// and the results it depends on.
const DefaultStepTaskPrompt = `The whole task: {{.Task}}

The plan:
{{range .Steps}}- {{.ID}}: {{.Title}}{{if eq .ID $.Step.ID}}  <- your step{{end}}
{{end}}
Your step is {{.Step.ID}}: {{.Step.Title}}
{{with .Step.Description}}{{.}}
{{end}}{{with .Step.DoneWhen}}It is done when: {{.}}
{{end}}{{with .Results}}
Results of the steps it depends on:
{{range .}}
[{{.ID}}] {{.Title}}:
{{.Result}}
{{range .Undone}}(Did not happen: {{.}}.)
{{end}}{{end}}{{end}}`

// DefaultJudgePrompt checks a step's result against its done_when.
const DefaultJudgePrompt = `You check one step of a plan for the task: {{.Task}}
The step is {{.Step.ID}}: {{.Step.Title}}
{{with .Step.Description}}{{.}}
{{end}}It is done when: {{.Step.DoneWhen}}
The user message is the step's result. Decide whether the result meets that condition. ` +
	`When it does not, say in "missing" exactly what is still to do.`

// templates are the parsed prompts.
type templates struct {
	Intent, Plan, DeepPlan, Step, StepTask, Direct, Replan, Deliver, Judge, Unavailable *template.Template
	defaults                                                                            *templates
	// ownStepTask is set when Prompts.StepTask is the user's: the default
	// is written by stepTaskText instead, which is much cheaper for large
	// plans (a test keeps the two the same).
	ownStepTask bool
}

// parse parses every prompt (the defaults for empty fields) and runs each
// on sample data, reporting every problem in one error.
func (p Prompts) parse() (*templates, error) {
	var errs []error
	one := func(field, src, def string) *template.Template {
		if strings.TrimSpace(src) == "" {
			src = def
		}
		t, err := template.New(field).Option("missingkey=error").Parse(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("planexec: Config.Prompts.%s does not parse: %w", field, err))
			return nil
		}
		if err := t.Execute(&bytes.Buffer{}, sampleData); err != nil {
			errs = append(errs, fmt.Errorf("planexec: Config.Prompts.%s fails on sample data (see PromptData for its fields): %w", field, err))
			return nil
		}
		return t
	}
	t := &templates{
		Intent:      one("Intent", p.Intent, DefaultIntentPrompt),
		Plan:        one("Plan", p.Plan, DefaultPlanPrompt),
		DeepPlan:    one("DeepPlan", p.DeepPlan, DefaultDeepPlanPrompt),
		Step:        one("Step", p.Step, DefaultStepPrompt),
		StepTask:    one("StepTask", p.StepTask, DefaultStepTaskPrompt),
		Direct:      one("Direct", p.Direct, DefaultDirectPrompt),
		Replan:      one("Replan", p.Replan, DefaultReplanPrompt),
		Deliver:     one("Deliver", p.Deliver, DefaultDeliverPrompt),
		Judge:       one("Judge", p.Judge, DefaultJudgePrompt),
		Unavailable: one("Unavailable", p.Unavailable, DefaultUnavailablePrompt),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.ownStepTask = strings.TrimSpace(p.StepTask) != ""
	if p != (Prompts{}) {
		d, err := Prompts{}.parse()
		if err != nil {
			return nil, err
		}
		t.defaults = d
	}
	return t, nil
}

// sampleData fills every field, so New finds templates that fail on
// fields that do not exist.
var sampleData = PromptData{
	Name: "agent", Tools: "- lookup: Look something up.\n", AskTool: AskToolName, MaxAsks: DefaultMaxAsks, Asked: 1,
	Task: "the task", Steps: []Step{{ID: "s1", Title: "First", DependsOn: nil, DoneWhen: "done"}},
	Step:    Step{ID: "s1", Title: "First", Description: "Do it.", DoneWhen: "done"},
	Results: []StepReport{{ID: "s1", Title: "First", Status: StepDone, Result: "ok"}},
	Error:   "sample error",
}

// render executes one prompt; pick chooses it from a templates. When the
// user's template fails, the default is used and the failure logged.
func (s *settings) render(ctx context.Context, pick func(*templates) *template.Template, d PromptData) string {
	d.Name = cmpOr(d.Name, s.Name)
	var b strings.Builder
	err := pick(s.prompts).Execute(&b, d)
	if err == nil {
		return b.String()
	}
	if s.prompts.defaults == nil {
		// A default template failing is a bug; the partial text is the
		// best there is.
		s.log.ErrorContext(ctx, "planexec: a default prompt template failed", slog.Any("error", err))
		return b.String()
	}
	s.log.WarnContext(ctx, "planexec: a prompt template failed; using the default", slog.Any("error", err))
	b.Reset()
	_ = pick(s.prompts.defaults).Execute(&b, d)
	return b.String()
}

// stepTaskText writes what DefaultStepTaskPrompt does, without the
// template engine's reflection: a step's prompt lists the whole plan, so
// rendering it is quadratic in the plan's size.
func stepTaskText(d PromptData) string {
	var b strings.Builder
	b.Grow(stepTaskSize(d))
	b.WriteString("The whole task: ")
	b.WriteString(d.Task)
	b.WriteString("\n\nThe plan:\n")
	for _, p := range d.Steps {
		b.WriteString("- ")
		b.WriteString(p.ID)
		b.WriteString(": ")
		b.WriteString(p.Title)
		if p.ID == d.Step.ID {
			b.WriteString("  <- your step")
		}
		b.WriteByte('\n')
	}
	b.WriteString("\nYour step is ")
	b.WriteString(d.Step.ID)
	b.WriteString(": ")
	b.WriteString(d.Step.Title)
	b.WriteByte('\n')
	if d.Step.Description != "" {
		b.WriteString(d.Step.Description)
		b.WriteByte('\n')
	}
	if d.Step.DoneWhen != "" {
		b.WriteString("It is done when: ")
		b.WriteString(d.Step.DoneWhen)
		b.WriteByte('\n')
	}
	if len(d.Results) > 0 {
		b.WriteString("\nResults of the steps it depends on:\n")
		for _, r := range d.Results {
			b.WriteString("\n[")
			b.WriteString(r.ID)
			b.WriteString("] ")
			b.WriteString(r.Title)
			b.WriteString(":\n")
			b.WriteString(r.Result)
			b.WriteByte('\n')
			for _, c := range r.Undone {
				fmt.Fprintf(&b, "(Did not happen: %s.)\n", c)
			}
		}
	}
	return b.String()
}

// stepTaskSize is the length of stepTaskText(d) but for the Undone notes
// (a rare few lines that grow the text once): the builder is sized at
// once, however long the results it quotes are.
func stepTaskSize(d PromptData) int {
	n := len("The whole task: ") + len(d.Task) + len("\n\nThe plan:\n") +
		len("\nYour step is ") + len(d.Step.ID) + len(": ") + len(d.Step.Title) + 1
	for _, p := range d.Steps {
		n += len("- ") + len(p.ID) + len(": ") + len(p.Title) + 1
		if p.ID == d.Step.ID {
			n += len("  <- your step")
		}
	}
	if d.Step.Description != "" {
		n += len(d.Step.Description) + 1
	}
	if d.Step.DoneWhen != "" {
		n += len("It is done when: ") + len(d.Step.DoneWhen) + 1
	}
	if len(d.Results) > 0 {
		n += len("\nResults of the steps it depends on:\n")
	}
	for _, r := range d.Results {
		n += len("\n[") + len(r.ID) + len("] ") + len(r.Title) + len(":\n") + len(r.Result) + 1
	}
	return n
}

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

	DefaultUnavailablePrompt = "I'm sorry, I could not handle this request just now: the service that answers it is not responding. " +
		"Please try again in a moment; your conversation is kept, so you can simply send your message again."

	DefaultDeliverPrompt = "The plan has run. Write the final answer for the user from the step results below: " +
		"answer what they asked, plainly, and say what could not be done and why. " +
		"An action a step tried that a person rejected, or that failed, did not happen: never report it as done; say so, with the person's reason."
)
