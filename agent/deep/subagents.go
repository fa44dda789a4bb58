package deep

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// TaskTool is the name of the tool that delegates to a sub-agent.
const TaskTool = "task"

// GeneralPurpose is the name of the sub-agent every deep agent has: the
// agent's own model and tools, with a fresh context.
const GeneralPurpose = "general-purpose"

// DefaultSubAgentPrompt is the system prompt of the general-purpose
// sub-agent and of a SubAgent without one.
const DefaultSubAgentPrompt = "You carry out one task for another agent, which sees only your final reply. " +
	"Work with your tools until the task is done, then reply with everything the other agent needs: " +
	"the result, the facts behind it and the paths of any files you wrote. Keep the reply short."

// SubAgent is an agent the deep agent can hand a task to (TaskTool). Each
// call runs it with a fresh context: the task's description is its only
// user message, and only its final answer goes back.
type SubAgent struct {
	// Name is what the model names it by (letters, digits, - and _).
	Name string
	// Description tells the model what it is good for.
	Description string
	// System is its system prompt (default DefaultSubAgentPrompt).
	System string
	// Tools are its tools; it also has the deep agent's filesystem
	// (shared with it) and planning tool. nil: the deep agent's own
	// Config.Tools.
	Tools []tool.Tool
	// Model answers its requests (nil: the deep agent's model).
	Model llm.Model
	// Middleware wraps its calls, outside the deep agent's own
	// (dangling-call repair, planning, filesystem).
	Middleware []middleware.Middleware
}

var subAgentName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// subAgents holds the compiled sub-agents by name.
type subAgents struct {
	graphs map[string]*graph.Graph
	names  []string // in declaration order, general-purpose first
	descs  map[string]string
}

type taskArgs struct {
	Description  string `json:"description" jsonschema:"the task, with everything the sub-agent needs to know: it does not see this conversation"`
	SubagentType string `json:"subagent_type" jsonschema:"the name of the sub-agent to give it to"`
}

// newSubAgents compiles the sub-agents. base is the react.Config every
// sub-agent starts from (model, policy, the deep agent's middleware).
func newSubAgents(cfg Config, base react.Config) (*subAgents, error) {
	s := &subAgents{graphs: map[string]*graph.Graph{}, descs: map[string]string{}}
	all := append([]SubAgent{{
		Name:        GeneralPurpose,
		Description: "An agent with the same tools as you, for a self-contained piece of work whose details you do not need to keep in your own context (research, reading many files, a draft).",
	}}, cfg.SubAgents...)
	var errs []error
	for i, sa := range all {
		switch {
		case !subAgentName.MatchString(sa.Name):
			errs = append(errs, fmt.Errorf("deep: sub-agent %d has the name %q; use 1 to 64 letters, digits, - and _", i, sa.Name))
			continue
		case s.graphs[sa.Name] != nil:
			errs = append(errs, fmt.Errorf("deep: two sub-agents are named %q (%q is built in)", sa.Name, GeneralPurpose))
			continue
		case i > 0 && strings.TrimSpace(sa.Description) == "":
			errs = append(errs, fmt.Errorf("deep: sub-agent %q has no description; the model chooses sub-agents by it", sa.Name))
			continue
		}
		rc := base
		rc.Name = "subagent-" + sa.Name
		rc.System = cmpOr(sa.System, DefaultSubAgentPrompt)
		if sa.Model != nil {
			rc.Model = sa.Model
		}
		if sa.Tools != nil {
			rc.Tools = slices.Clone(sa.Tools)
		}
		rc.Middleware = append(slices.Clone(sa.Middleware), base.Middleware...)
		withApprovals(&rc, cfg.Policy, true)
		g, err := react.New(rc)
		if err != nil {
			errs = append(errs, fmt.Errorf("deep: sub-agent %q: %w", sa.Name, err))
			continue
		}
		s.graphs[sa.Name] = g
		s.names = append(s.names, sa.Name)
		s.descs[sa.Name] = sa.Description
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// tool returns the task tool. It is a read tool: the sub-agents' own
// tools ask for approval where they must, and those requests stop the
// deep agent's run, on its thread, until they are answered.
func (s *subAgents) tool() tool.Tool {
	var b strings.Builder
	b.WriteString("Hand a self-contained task to a sub-agent, which works on it with a fresh context and returns only its final answer. " +
		"Use it for work that would fill your context, or for independent parts you can run at once (call it several times in one reply). The sub-agents:\n")
	for _, n := range s.names {
		fmt.Fprintf(&b, "- %s: %s\n", n, s.descs[n])
	}
	return tool.MustFunc(TaskTool, strings.TrimSpace(b.String()), func(ctx context.Context, a taskArgs) (string, error) {
		g := s.graphs[a.SubagentType]
		switch {
		case g == nil:
			return "", tool.BadArguments(TaskTool, "there is no sub-agent %q; the sub-agents are %s", a.SubagentType, strings.Join(s.names, ", "))
		case strings.TrimSpace(a.Description) == "":
			return "", tool.BadArguments(TaskTool, "description is empty; describe the task for the sub-agent")
		}
		// Inside the call's task this is a nested run in its own
		// namespace of the thread: an interrupt (an approval) stops the
		// deep agent's run too, and the resumed call goes on where the
		// sub-agent stopped.
		res, err := g.Invoke(ctx, react.Input(a.Description))
		if err != nil {
			return "", err
		}
		answer, ok := react.Answer(res.State)
		if !ok {
			return "", fmt.Errorf("the sub-agent %s finished without an answer", a.SubagentType)
		}
		return answer, nil
	}, tool.ReadOnly(), tool.Summary(func(a taskArgs) string {
		return fmt.Sprintf("give the %s sub-agent the task: %s", a.SubagentType, a.Description)
	}))
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
