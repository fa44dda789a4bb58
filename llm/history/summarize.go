package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// DefaultSummaryPrompt is the system prompt of Summarize's model call.
const DefaultSummaryPrompt = `You keep the running summary of a conversation between a user and an assistant, so that the assistant can continue without the older messages.
You are given the summary so far and the messages that follow it. Write the updated summary: keep facts, decisions, the user's goals and preferences, open questions, and the tool results the assistant may still need; drop greetings and small talk. Write only the summary, in the language of the conversation.`

// DefaultSummaryIntro starts the system message that carries the summary in
// each request.
const DefaultSummaryIntro = "Summary of the earlier part of this conversation (those messages are not shown):\n"

// maxTranscriptRunes bounds one message's text in the transcript the
// summariser reads, so a huge tool result cannot blow up its request.
const maxTranscriptRunes = 2000

// Summarize sends the last turns as they are and the turns before them as a
// running summary. When more than MaxTurns turns follow the summary, the
// oldest of them (all but the last KeepTurns) are folded into it by one
// model call that sees the summary so far and those messages only: the
// summary is extended, never recomputed from the whole thread. The summary
// travels in thread state (History.Summary / Selection.Summary; react keeps
// it in its summary key) and is sent as a system message after the agent's
// system prompt. The messages themselves stay in the thread.
//
// A summary whose last message (Summary.Through) is no longer in the
// history — the thread was edited or rewound — is dropped and rebuilt from
// the start.
type Summarize struct {
	// Model writes the summary; required.
	Model llm.Model
	// Prompt replaces DefaultSummaryPrompt.
	Prompt string
	// Intro replaces DefaultSummaryIntro.
	Intro string
	// KeepTurns is how many of the latest turns are always sent whole;
	// 0 means 4.
	KeepTurns int
	// MaxTurns is how many turns may follow the summary before the
	// oldest are summarised; 0 means 2×KeepTurns. It must be at least
	// KeepTurns. The gap between them is how many turns one summary call
	// folds in.
	MaxTurns int
	// Request is the template of the summary call (MaxTokens,
	// Temperature, ...); its Messages and Tools must be empty.
	Request llm.Request
}

// Validate reports a missing model, bad turn counts or a request
// template with messages or tools.
func (p Summarize) Validate() error {
	keep := cmp.Or(p.KeepTurns, 4)
	maxTurns := cmp.Or(p.MaxTurns, 2*keep)
	switch {
	case p.Model == nil:
		return errors.New("history: Summarize.Model is nil; give the policy a model to write the summary")
	case keep < 1 || maxTurns < keep:
		return fmt.Errorf("history: Summarize keeps %d turns and summarises past %d; KeepTurns must be at least 1 and MaxTurns at least KeepTurns", keep, maxTurns)
	case len(p.Request.Messages) > 0 || len(p.Request.Tools) > 0:
		return errors.New("history: Summarize.Request has messages or tools; the policy writes the messages itself")
	}
	return nil
}

// Select summarises when due and returns the summary and the turns after
// it.
func (p Summarize) Select(ctx context.Context, h History) (Selection, error) {
	if err := p.Validate(); err != nil {
		return Selection{}, err
	}
	keep := cmp.Or(p.KeepTurns, 4)
	maxTurns := cmp.Or(p.MaxTurns, 2*keep)
	pinned, rest := leadingSystem(h.Messages)
	sum, start := h.Summary, 0
	if !sum.IsZero() {
		at := -1
		for i := len(rest) - 1; i >= 0; i-- {
			if rest[i].ID == sum.Through {
				at = i
				break
			}
		}
		if at < 0 {
			sum = Summary{}
		} else {
			start = at + 1
		}
	}
	turns := turnsOf(rest[start:])
	if len(turns) > maxTurns {
		fold := concat(turns[:len(turns)-keep]...)
		text, err := p.summarise(ctx, sum.Text, fold)
		if err != nil {
			return Selection{}, err
		}
		sum = Summary{Text: text, Through: fold[len(fold)-1].ID, Messages: sum.Messages + len(fold)}
		turns = turns[len(turns)-keep:]
	}
	var intro []llm.Message
	if sum.Text != "" {
		intro = []llm.Message{llm.System(cmp.Or(p.Intro, DefaultSummaryIntro) + sum.Text)}
	}
	return Selection{Messages: concat(pinned, intro, concat(turns...)), Summary: sum}, nil
}

// summarise asks the model for the summary extended by msgs.
func (p Summarize) summarise(ctx context.Context, prev string, msgs []llm.Message) (string, error) {
	var b strings.Builder
	b.WriteString("Summary so far:\n")
	b.WriteString(cmp.Or(prev, "(none yet)"))
	b.WriteString("\n\nMessages that follow it:\n")
	for _, m := range msgs {
		writeLine(&b, m)
	}
	req := p.Request.Clone()
	req.Messages = []llm.Message{llm.System(cmp.Or(p.Prompt, DefaultSummaryPrompt)), llm.User(b.String())}
	resp, err := p.Model.Generate(ctx, req)
	if err != nil {
		return "", fmt.Errorf("history: summarising %d messages with %s: %w", len(msgs), p.Model.Name(), err)
	}
	if resp == nil {
		return "", fmt.Errorf("history: summarising with %s: the model returned no reply", p.Model.Name())
	}
	graph.RecordUsage(ctx, resp.Usage)
	text := strings.TrimSpace(resp.Message.Text())
	if text == "" {
		return "", fmt.Errorf("history: summarising %d messages with %s: the reply is empty", len(msgs), p.Model.Name())
	}
	return text, nil
}

// writeLine writes one message of the transcript: role, text (cut to
// maxTranscriptRunes) and tool calls.
func writeLine(b *strings.Builder, m llm.Message) {
	who := string(m.Role)
	if m.Role == llm.RoleTool {
		who = "tool " + m.ToolName + " result"
	}
	b.WriteString(who)
	b.WriteString(": ")
	b.WriteString(cut(m.Text()))
	for _, c := range m.ToolCalls {
		fmt.Fprintf(b, " [calls %s(%s)]", c.Name, cut(c.Arguments))
	}
	b.WriteByte('\n')
}

func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxTranscriptRunes {
		return s
	}
	r := []rune(s)
	return string(r[:maxTranscriptRunes]) + " …(cut)"
}
