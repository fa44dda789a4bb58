package deep

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// BasePrompt is the deep agent's own system prompt; Config.Instructions
// come before it.
const BasePrompt = `## How you work

- Plan: for a task of three steps or more, write a to-do list with write_todos first, and rewrite it as you go (one item in_progress at a time; mark items completed as soon as they are done).
- Files: you have a filesystem of your own (ls, read_file, write_file, edit_file, grep, glob; absolute paths such as /notes/findings.md). Keep notes, drafts and large results there rather than in your replies, and read long files a part at a time.
- Delegate: hand self-contained work to a sub-agent with the task tool. It sees only the description you write, so put everything it needs in it; you get back only its final answer.
- Finish with a short answer for the person: what was done, and where the results are.`

// Config configures a deep agent. Only Model is required.
type Config struct {
	// Name names the graph (default "deep").
	Name string
	// Model answers every request, the sub-agents' too unless they have
	// their own.
	Model llm.Model
	// Instructions are the agent's own instructions, put before
	// BasePrompt in the system prompt.
	Instructions string
	// Tools are the agent's tools besides its own (planning, files,
	// skills, task); the general-purpose sub-agent has them too.
	Tools []tool.Tool
	// SubAgents are the named sub-agents the task tool offers, besides
	// GeneralPurpose.
	SubAgents []SubAgent
	// AsyncSubAgents run in the background on a server (see Async); the
	// agent gets the background task tools when there are any.
	AsyncSubAgents []AsyncSubAgent
	// Skills are offered on demand (see LoadSkills and Skills).
	Skills []Skill
	// Files configures the virtual filesystem.
	Files FilesConfig
	// Summarize configures summarisation with offload.
	Summarize SummarizeConfig
	// Policy says which tool calls wait for a person's approval
	// (tool.Policy), in the agent and in its sub-agents; a rule for a
	// tool a sub-agent does not have is left out of its policy. The
	// filesystem's write tools run without asking unless Policy names
	// them; other tools follow Policy, then their kind (write tools ask).
	Policy tool.Policy
	// Middleware wraps the agent's calls, outside its own middleware.
	Middleware []middleware.Middleware
	// MaxSteps is the agent's step limit (default 200); each sub-agent
	// run has the same.
	MaxSteps int
}

// New returns the deep agent as a compiled graph: a react loop whose
// middleware gives it planning (Todos), a virtual filesystem over the
// run's store, skills, summarisation with offload and dangling-call
// repair, and whose task tool runs sub-agents as nested runs. Run it with
// a store (graph.WithStore), and with a checkpointer and a thread for
// approvals; its input is Input, its answer Answer.
func New(cfg Config) (*graph.Graph, error) {
	if cfg.Model == nil {
		return nil, errors.New("deep: Config.Model is nil; give the agent an llm.Model")
	}
	files, err := Files(cfg.Files)
	if err != nil {
		return nil, err
	}
	var errs []error
	own := []middleware.Middleware{Repair()}
	if !cfg.Summarize.Off {
		sum, err := Summarization(cfg.Summarize, files, cfg.Model)
		errs = append(errs, err)
		own = append(own, sum)
	}
	own = append(own, Planning(), files)
	if len(cfg.Skills) > 0 {
		own = append(own, Skills(cfg.Skills))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	steps := cmpOrInt(cfg.MaxSteps, 200)
	base := react.Config{
		Model:      cfg.Model,
		Tools:      slices.Clone(cfg.Tools),
		Middleware: append(slices.Clone(cfg.Middleware), own...),
		MaxSteps:   steps,
	}
	subs, err := newSubAgents(cfg, base)
	if err != nil {
		return nil, err
	}
	rc := base
	rc.Name = cmpOr(cfg.Name, "deep")
	rc.System = strings.TrimSpace(cfg.Instructions + "\n\n" + BasePrompt)
	rc.Tools = append(rc.Tools, subs.tool())
	if len(cfg.AsyncSubAgents) > 0 {
		async, err := Async(cfg.AsyncSubAgents)
		if err != nil {
			return nil, err
		}
		rc.Middleware = append(slices.Clone(rc.Middleware), async)
	}
	withApprovals(&rc, cfg.Policy, false)
	g, err := react.New(rc)
	if err != nil {
		return nil, fmt.Errorf("deep: %w", err)
	}
	return g, nil
}

// withApprovals gives the agent built from rc its approvals: today the
// tool node's approval policy (react.Config.Policy). It is the one place
// to change when approval becomes a middleware of the chain.
func withApprovals(rc *react.Config, p tool.Policy, sub bool) {
	rc.Policy = approvalPolicy(p, *rc, sub)
}

// approvalPolicy is the approval policy of an agent built from rc: the
// rules of p (only those for the tools rc has, when sub is set: a
// sub-agent has fewer tools, while for the agent itself react.New reports
// a misspelt rule), and the filesystem's write tools approved at once
// unless p names them.
func approvalPolicy(p tool.Policy, rc react.Config, sub bool) tool.Policy {
	names := map[string]bool{}
	for _, t := range rc.Tools {
		names[t.Info().Name] = true
	}
	for _, m := range rc.Middleware {
		if b, ok := m.(middleware.Toolbox); ok {
			for _, t := range b.Tools() {
				names[t.Info().Name] = true
			}
		}
	}
	out := tool.Policy{}
	for name, r := range p {
		if names[name] || !sub {
			out[name] = r
		}
	}
	for _, name := range []string{WriteFileTool, EditFileTool} {
		if _, ok := p[name]; !ok && names[name] {
			out[name] = tool.AutoApprove()
		}
	}
	return out
}

// Input returns a run input that appends a user message with text.
func Input(text string) graph.Update { return react.Input(text) }

// Answer returns the agent's final answer in s (see react.Answer).
func Answer(s graph.State) (string, bool) { return react.Answer(s) }

func cmpOrInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}
