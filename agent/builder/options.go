package builder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// nodeExtra is what a node declares beyond its react.Config.
type nodeExtra struct {
	description string
	retry       []graph.RetryPolicy
	timeout     time.Duration
}

// extra returns the node's extra declaration, creating it.
func (b *Builder) extra(node string) *nodeExtra {
	if b.extras == nil {
		b.extras = map[string]*nodeExtra{}
	}
	x := b.extras[node]
	if x == nil {
		x = &nodeExtra{}
		b.extras[node] = x
	}
	return x
}

// Describe sets what an LLM node does, for people and tools that show the
// agent (Agent.Nodes). It does not reach the node's model: that is what
// the node's prompt is for.
func (b *Builder) Describe(node, text string) *Builder {
	b.extra(node).description = text
	return b
}

// Retry gives an LLM node retry policies (graph.RetryPolicy, tried in
// order): a visit that fails with an error a policy accepts (by default a
// transient one: a provider's 429 or 5xx, a timeout) is run again after
// the policy's backoff, up to its MaxAttempts. Without Retry a failed
// visit fails the run.
func (b *Builder) Retry(node string, policies ...graph.RetryPolicy) *Builder {
	if len(policies) == 0 {
		b.fail("Retry(%q) was given no policy", node)
		return b
	}
	x := b.extra(node)
	x.retry = append(x.retry, policies...)
	return b
}

// NodeTimeout bounds each visit (each attempt, with Retry) of an LLM node:
// a visit still running after d is cancelled and fails with an error
// matching context.DeadlineExceeded, which the default retry policy
// retries. The agent's Timeout still bounds the whole run.
func (b *Builder) NodeTimeout(node string, d time.Duration) *Builder {
	if d <= 0 {
		b.fail("NodeTimeout(%q, %v): give a positive duration", node, d)
		return b
	}
	b.extra(node).timeout = d
	return b
}

// checkExtras reports extras declared for nodes that do not exist.
func (b *Builder) checkExtras(known string) []error {
	var errs []error
	for name := range b.extras {
		if b.byName[name] == nil {
			errs = append(errs, fmt.Errorf("Describe, Retry or NodeTimeout names %q, which is not an LLM node (nodes: %s)", name, known))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// nodeOptions are the graph options of an LLM node's subgraph.
func (b *Builder) nodeOptions(node string) []graph.NodeOption {
	x := b.extras[node]
	if x == nil {
		return nil
	}
	var opts []graph.NodeOption
	if len(x.retry) > 0 {
		opts = append(opts, graph.WithRetry(x.retry...))
	}
	if x.timeout > 0 {
		opts = append(opts, graph.Timeout(x.timeout))
	}
	return opts
}

// NodeInfo describes one LLM node of a built agent.
type NodeInfo struct {
	Name        string
	Description string
}

// Nodes lists the agent's LLM nodes in declaration order, with their
// descriptions (Describe).
func (a *Agent) Nodes() []NodeInfo { return slices.Clone(a.infos) }

// entryKey holds the node a run starts at when its input chooses one
// (StartAt); "" means the declared entry.
var entryKey = graph.NewKey[string]("builder_entry")

// StartAt returns a run input that adds a user message with text and
// starts the run at node instead of the declared entry (Entry). A node
// that is not one of the agent's LLM nodes fails the run with an error
// naming the nodes. Input(text) starts at the declared entry again.
func StartAt(node, text string) graph.Update {
	return append(react.Input(text), entryKey.Set(node))
}

// entry routes START to the chosen entry node.
func (a *Agent) entry(def string) graph.RouteFunc {
	return func(_ context.Context, s graph.State) (string, error) {
		n := entryKey.Get(s)
		if n == "" {
			return def, nil
		}
		if !a.nodes[n] {
			names := make([]string, len(a.infos))
			for i, in := range a.infos {
				names[i] = in.Name
			}
			return "", fmt.Errorf("builder: the run asks to start at %q, which is not an LLM node of agent %q (nodes: %s)", n, a.name, strings.Join(names, ", "))
		}
		return n, nil
	}
}

// ID returns the run's execution ID: the graph run ID its checkpoints and
// events carry (Start assigns a new UUID; a graph.WithRunID in the run's
// options is overridden).
func (r *Run) ID() string { return r.id }

// Started returns when Start (or Run) began the run.
func (r *Run) Started() time.Time { return r.started }

// ErrRunEnded is returned by AddMessage once the run has ended.
var ErrRunEnded = errors.New("builder: the run has ended; add the message to the thread's next run instead")

// AddMessage adds a user message to the running execution: it joins the
// conversation after the current visit, before the judge is asked and the
// next node runs, so the next node (and the judge) see it. Messages added
// while the run is paused wait for it to resume. It fails with ErrRunEnded
// once the run has ended. A message added while the run's last visit is
// finishing still joins the conversation (the route after that visit
// takes it), so it is in the thread's state for the next run.
func (r *Run) AddMessage(text string) error {
	if strings.TrimSpace(text) == "" {
		return errors.New("builder: AddMessage was given an empty message")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return ErrRunEnded
	}
	r.inbox = append(r.inbox, text)
	return nil
}

// takeMessages returns and clears the messages added since the last call.
func (r *Run) takeMessages() []llm.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []llm.Message
	for _, t := range r.inbox {
		out = append(out, llm.User(t))
	}
	r.inbox = nil
	return out
}

// end marks the run ended for AddMessage.
func (r *Run) end() {
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
}

// inboxFrom returns the messages added to the Run whose graph run ctx
// belongs to.
func (a *Agent) inboxFrom(ctx context.Context) []llm.Message {
	if r, ok := ctx.Value(observerKey{a}).(*Run); ok {
		return r.takeMessages()
	}
	return nil
}

func newRunID() string { return uuid.NewString() }
