// Package history decides which part of a long thread's messages is sent
// to the model on each call. A Policy sees the thread's whole history and
// returns the messages of one request; the thread state keeps every
// message as it was — only what the model receives changes.
//
// Three policies come with the package:
//
//   - LastTurns keeps the last N turns (a turn starts at a user message and
//     holds every assistant and tool message up to the next one).
//   - Budget trims the history to a token budget, keeping tool calls with
//     their results, the system messages and the latest user message.
//   - Summarize replaces older turns with a running summary, made by a
//     model call and carried in thread state (Summary), extended by each
//     later summarisation rather than recomputed.
//
// agent/middleware.History applies a policy to each model call that goes
// through an agent's middleware chain (react, router and planexec's
// phases use it); code outside a chain calls Policy.Select itself.
package history

import (
	"context"

	"github.com/trellis-agents/trellis/llm"
)

// Policy chooses the messages of one model request. A policy that can be
// misconfigured also has a Validate() error method, which agents call when
// they are built (the package's policies do).
type Policy interface {
	// Select returns the messages to send after the agent's own system
	// prompt (h.System, which the policy may count but does not return),
	// and the summary to carry in state. It must not modify h.Messages.
	Select(ctx context.Context, h History) (Selection, error)
}

// History is what a Policy chooses from.
type History struct {
	// System are the messages the agent puts before the history in every
	// request (its system prompt). They are always sent; Budget counts
	// them against its budget.
	System []llm.Message
	// Messages is the thread's whole history, oldest first.
	Messages []llm.Message
	// Summary is the running summary carried in state from the last
	// call (zero when there is none).
	Summary Summary
}

// Selection is a Policy's answer.
type Selection struct {
	// Messages are sent after History.System, in this order.
	Messages []llm.Message
	// Summary is the summary to carry in state: History.Summary when
	// the policy did not change it.
	Summary Summary
}

// Summary is a running summary of the oldest part of a thread, kept in
// thread state between calls.
type Summary struct {
	// Text is the summary.
	Text string `json:"text,omitempty"`
	// Through is the ID of the last message the summary covers; the
	// messages after it are sent as they are.
	Through string `json:"through,omitempty"`
	// Messages is how many messages the summary covers in all.
	Messages int `json:"messages,omitempty"`
}

// IsZero reports whether s holds no summary.
func (s Summary) IsZero() bool { return s.Text == "" && s.Through == "" }

// None sends the whole history: the policy of an agent given none.
type None struct{}

// Select returns h.Messages unchanged.
func (None) Select(_ context.Context, h History) (Selection, error) {
	return Selection{Messages: h.Messages, Summary: h.Summary}, nil
}

// split returns the leading system messages of msgs and the turns after
// them. A turn starts at a user message; messages before the first user
// message form a turn of their own.
func split(msgs []llm.Message) (pinned []llm.Message, turns [][]llm.Message) {
	pinned, rest := leadingSystem(msgs)
	return pinned, turnsOf(rest)
}

// leadingSystem splits off the system messages at the start of msgs.
func leadingSystem(msgs []llm.Message) (system, rest []llm.Message) {
	i := 0
	for i < len(msgs) && msgs[i].Role == llm.RoleSystem {
		i++
	}
	return msgs[:i], msgs[i:]
}

// turnsOf cuts msgs before each user message.
func turnsOf(msgs []llm.Message) [][]llm.Message {
	var turns [][]llm.Message
	start := 0
	for j := range msgs {
		if msgs[j].Role == llm.RoleUser && j > start {
			turns = append(turns, msgs[start:j])
			start = j
		}
	}
	if start < len(msgs) {
		turns = append(turns, msgs[start:])
	}
	return turns
}

// units splits msgs into the pieces a trim may drop: one message, or an
// assistant message with tool calls together with the results that follow
// it and answer those calls.
func units(msgs []llm.Message) [][]llm.Message {
	var out [][]llm.Message
	for i := 0; i < len(msgs); {
		j := i + 1
		if len(msgs[i].ToolCalls) > 0 {
			ids := make(map[string]bool, len(msgs[i].ToolCalls))
			for _, c := range msgs[i].ToolCalls {
				ids[c.ID] = true
			}
			for j < len(msgs) && msgs[j].Role == llm.RoleTool && ids[msgs[j].ToolCallID] {
				j++
			}
		}
		out = append(out, msgs[i:j])
		i = j
	}
	return out
}

func concat(parts ...[]llm.Message) []llm.Message {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]llm.Message, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
