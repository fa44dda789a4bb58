// Package deep is the deep-agent app: agent/deep served as an assistant.
// Its scripted demo model plays one scenario that shows each part of the
// harness: it plans with a to-do list, loads a skill, hands the research
// to a sub-agent (which writes its notes to the shared filesystem), reads
// the notes, and writes the brief, which waits for the person's approval.
//
// # Embedding
//
// New(ctx, Config{Model}) builds the app; Instructions and SharedFiles
// change the agent. In trellis.yaml:
//
//	apps:
//	  deep:
//	    instructions: "You write decision briefs for the office."
//	    shared_files: true   # one filesystem for every thread
package deep

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"strings"

	agentdeep "github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Name is the app's name.
const Name = "deep"

// Summary says in one line what the app does.
const Summary = "a deep agent (agent/deep): plans with to-dos, keeps files, delegates to sub-agents, loads skills, asks before writing"

// Task is the request the demo plays.
const Task = "Write a one-page brief on whether the office kitchen should stock tea or coffee, and save it as /brief.md."

// Instructions are the agent's default instructions.
const Instructions = "You are the office's research assistant: you look things up, keep notes in your files and write short documents people can act on."

// ResearchDir is where the researcher sub-agent keeps its notes; writes
// there run without asking, every other write asks first.
const ResearchDir = "/research/"

//go:embed skills
var skillFiles embed.FS

// Skills returns the app's skills (brief-writing).
func Skills() ([]agentdeep.Skill, error) {
	sub, err := fs.Sub(skillFiles, "skills")
	if err != nil {
		return nil, err
	}
	return agentdeep.LoadSkills(sub, ".")
}

const researcherPrompt = "You research one question for another agent."

// Researcher is the named sub-agent the demo delegates to.
func Researcher() agentdeep.SubAgent {
	return agentdeep.SubAgent{
		Name:        "researcher",
		Description: "Looks facts up and saves them as notes under " + ResearchDir + "; give it the question and the file to write.",
		System:      researcherPrompt + " Save your findings, with figures, to the file it names under " + ResearchDir + ", then reply with a short summary and the file's path.",
		Tools:       []tool.Tool{},
	}
}

// Policy is the app's approval policy: a write outside ResearchDir waits
// for the person.
func Policy() tool.Policy {
	return tool.Policy{agentdeep.WriteFileTool: tool.ApproveIf(func(args json.RawMessage) bool {
		var a struct {
			Path string `json:"path"`
		}
		return json.Unmarshal(args, &a) == nil && strings.HasPrefix(a.Path, ResearchDir)
	})}
}

// Config configures the app. Model is required.
type Config struct {
	// Model answers every request (required; Script() for the demo).
	Model llm.Model
	// Instructions replace the default Instructions.
	Instructions string
	// SharedFiles gives every thread one filesystem (default: one per
	// thread).
	SharedFiles bool
	// Request is what App.Input("") sends (default Task).
	Request string
	// Middleware wraps the agent's calls, outside its own (agent/deep's
	// Config.Middleware).
	Middleware []middleware.Middleware
}

// Settings is what trellis.yaml's apps.deep carries.
type Settings struct {
	Instructions string `json:"instructions,omitempty"`
	SharedFiles  bool   `json:"shared_files,omitempty"`
}

// New builds the app.
func New(_ context.Context, cfg Config) (*apps.App, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("deep: Config.Model is nil; pass the llm.Model the agent runs on (deep.Script() for the scripted demo)")
	}
	skills, err := Skills()
	if err != nil {
		return nil, fmt.Errorf("deep: %w", err)
	}
	g, err := agentdeep.New(agentdeep.Config{
		Name:         Name,
		Model:        cfg.Model,
		Instructions: cmpOr(cfg.Instructions, Instructions),
		SubAgents:    []agentdeep.SubAgent{Researcher()},
		Skills:       skills,
		Files:        agentdeep.FilesConfig{Shared: cfg.SharedFiles},
		Policy:       Policy(),
		Middleware:   cfg.Middleware,
	})
	if err != nil {
		return nil, err
	}
	request := cmpOr(cfg.Request, Task)
	return &apps.App{
		Name:    Name,
		Summary: Summary,
		Graph:   g,
		Input: func(r string) graph.Update {
			return agentdeep.Input(cmpOr(r, request))
		},
		Script:  Script,
		Events:  graph.EventTaskStart,
		Print:   printTask,
		Outcome: func(_ context.Context, s graph.State) string { return Outcome(s) },
		Close:   apps.Closer(),
	}, nil
}

// Entry describes the app to runners; Env.Settings is a Settings object.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: Script, Check: apps.CheckSettings[Settings],
		Start: apps.Start{Examples: []string{Task, "Write a brief on tea versus coffee for the office kitchen."}},
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			var st Settings
			if err := env.Decode(&st); err != nil {
				return nil, fmt.Errorf("deep: %w", err)
			}
			return New(ctx, Config{Model: env.Model, Instructions: st.Instructions, SharedFiles: st.SharedFiles, Middleware: env.Middleware})
		}}
}

// Outcome renders a thread: its to-do list and the answer.
func Outcome(s graph.State) string {
	var b strings.Builder
	if todos := agentdeep.Todos.Get(s); len(todos) > 0 {
		b.WriteString("to-do list:\n")
		for _, t := range todos {
			fmt.Fprintf(&b, "  [%s] %s\n", t.Status, t.Content)
		}
	}
	if a, ok := react.Answer(s); ok {
		fmt.Fprintf(&b, "answer: %s\n", a)
	}
	return b.String()
}

// printTask shows each tool call of the agent as it starts, its
// sub-agents' calls indented.
func printTask(w io.Writer, ev graph.Event) {
	c, ok := ev.Task.Payload.(llm.ToolCall)
	if ev.Kind != graph.EventTaskStart || !ok {
		return
	}
	indent := ""
	if ev.Namespace != "" {
		indent = "    "
	}
	args := []rune(c.Arguments)
	if len(args) > 100 {
		args = append(args[:100], []rune("…")...)
	}
	fmt.Fprintf(w, "%s- %s %s\n", indent, c.Name, string(args))
}

func cmpOr(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
