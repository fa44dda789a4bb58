package builder

import (
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// Spec declares an agent as data (JSON or YAML), for agents defined in a
// configuration file rather than in code; FromSpec turns it into a
// Builder. Every field maps onto the Builder method of the same name.
type Spec struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description"`
	// MaxIterations and Timeout (a Go duration, "90s") are the agent's
	// limits (0 / "": the defaults).
	MaxIterations int    `json:"max_iterations,omitempty" yaml:"max_iterations"`
	Timeout       string `json:"timeout,omitempty" yaml:"timeout"`
	// JudgePrompt replaces DefaultJudgePrompt.
	JudgePrompt string     `json:"judge_prompt,omitempty" yaml:"judge_prompt"`
	Nodes       []NodeSpec `json:"nodes" yaml:"nodes"`
	// Edges are unconditional edges; To may be "END".
	Edges []EdgeSpec `json:"edges,omitempty" yaml:"edges"`
	// When are conditional edges, judged in order.
	When     []WhenSpec     `json:"when,omitempty" yaml:"when"`
	Parallel []ParallelSpec `json:"parallel,omitempty" yaml:"parallel"`
	Joins    []JoinSpec     `json:"joins,omitempty" yaml:"joins"`
	Entry    string         `json:"entry" yaml:"entry"`
	End      []string       `json:"end,omitempty" yaml:"end"`
}

// NodeSpec is one LLM node.
type NodeSpec struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description"`
	Prompt      string `json:"prompt" yaml:"prompt"`
	// Tools name tools of the registry FromSpec is given.
	Tools []string `json:"tools,omitempty" yaml:"tools"`
	// Retries, when positive, retries a transiently failed visit up to
	// this many times (graph.RetryPolicy{MaxAttempts: Retries+1}).
	Retries int `json:"retries,omitempty" yaml:"retries"`
	// Timeout bounds each visit (a Go duration; "": none).
	Timeout string `json:"timeout,omitempty" yaml:"timeout"`
}

// EdgeSpec is an unconditional edge.
type EdgeSpec struct {
	From string `json:"from" yaml:"from"`
	To   string `json:"to" yaml:"to"`
}

// WhenSpec is a conditional edge.
type WhenSpec struct {
	From      string `json:"from" yaml:"from"`
	Condition string `json:"condition" yaml:"condition"`
	To        string `json:"to" yaml:"to"`
}

// ParallelSpec runs To at once after From.
type ParallelSpec struct {
	From string   `json:"from" yaml:"from"`
	To   []string `json:"to" yaml:"to"`
}

// JoinSpec runs To once every node in From has answered.
type JoinSpec struct {
	To   string   `json:"to" yaml:"to"`
	From []string `json:"from" yaml:"from"`
}

// FromSpec returns a Builder declaring spec, with node tools taken by
// name from tools. Mistakes (an unknown tool, a bad duration) are
// recorded like any Builder mistake and reported by Build.
func FromSpec(spec Spec, tools map[string]tool.Tool) *Builder {
	b := New(spec.Name).Description(spec.Description)
	if spec.MaxIterations != 0 {
		b.MaxIterations(spec.MaxIterations)
	}
	if spec.Timeout != "" {
		if d, err := time.ParseDuration(spec.Timeout); err != nil {
			b.fail("timeout %q is not a duration (write 90s or 2m)", spec.Timeout)
		} else {
			b.Timeout(d)
		}
	}
	if spec.JudgePrompt != "" {
		b.JudgePrompt(spec.JudgePrompt)
	}
	end := func(to string) string {
		if strings.EqualFold(to, "END") || to == graph.END {
			return graph.END
		}
		return to
	}
	for _, n := range spec.Nodes {
		var ts []tool.Tool
		for _, name := range n.Tools {
			t, ok := tools[name]
			if !ok {
				names := make([]string, 0, len(tools))
				for k := range tools {
					names = append(names, k)
				}
				slices.Sort(names)
				b.fail("node %q names the tool %q, which is not available (tools: %s)", n.Name, name, strings.Join(names, ", "))
				continue
			}
			ts = append(ts, t)
		}
		b.LLMNode(n.Name, n.Prompt, ts...)
		if n.Description != "" {
			b.Describe(n.Name, n.Description)
		}
		if n.Retries > 0 {
			b.Retry(n.Name, graph.RetryPolicy{MaxAttempts: n.Retries + 1})
		}
		if n.Timeout != "" {
			if d, err := time.ParseDuration(n.Timeout); err != nil {
				b.fail("node %q: timeout %q is not a duration (write 30s or 2m)", n.Name, n.Timeout)
			} else {
				b.NodeTimeout(n.Name, d)
			}
		}
	}
	for _, e := range spec.Edges {
		b.Edge(e.From, end(e.To))
	}
	for _, w := range spec.When {
		b.When(w.From, w.Condition, end(w.To))
	}
	for _, p := range spec.Parallel {
		b.Parallel(p.From, p.To...)
	}
	for _, j := range spec.Joins {
		b.Join(j.To, j.From...)
	}
	if spec.Entry != "" {
		b.Entry(spec.Entry)
	}
	b.End(spec.End...)
	return b
}
