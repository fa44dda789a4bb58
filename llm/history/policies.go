package history

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/llm"
)

// LastTurns keeps the leading system messages and the last N turns of the
// history. A turn starts at a user message and holds every assistant and
// tool message up to the next user message, so tool calls and their
// results are never separated. The latest turn is always kept.
type LastTurns struct {
	// N is how many turns to keep; at least 1.
	N int
}

// Validate reports an N below 1.
func (p LastTurns) Validate() error {
	if p.N < 1 {
		return fmt.Errorf("history: LastTurns.N is %d; keep at least one turn", p.N)
	}
	return nil
}

// Select keeps the last p.N turns.
func (p LastTurns) Select(_ context.Context, h History) (Selection, error) {
	if err := p.Validate(); err != nil {
		return Selection{}, err
	}
	pinned, turns := split(h.Messages)
	if len(turns) <= p.N {
		return Selection{Messages: h.Messages, Summary: h.Summary}, nil
	}
	return Selection{Messages: concat(pinned, concat(turns[len(turns)-p.N:]...)), Summary: h.Summary}, nil
}

// Counter counts the tokens of a message for Budget.
type Counter interface {
	Count(m llm.Message) int
}

// CounterFunc adapts a function to Counter.
type CounterFunc func(m llm.Message) int

// Count calls f.
func (f CounterFunc) Count(m llm.Message) int { return f(m) }

// Estimate is the default Counter: a rough count without a tokenizer, one
// token per four runes of text (the rule of thumb for English with
// OpenAI's tokenizers), rounded up, over the text,
// reasoning, tool names and arguments, plus 4 tokens per message and 85
// per image for the framing providers add. It overestimates code and
// underestimates Chinese or Japanese text (about one token per character
// there); plug in a real tokenizer through Counter when the budget is
// close to the model's window.
var Estimate Counter = CounterFunc(estimate)

func estimate(m llm.Message) int {
	runes := utf8.RuneCountInString(m.Reasoning) + utf8.RuneCountInString(m.ToolName)
	images := 0
	for _, p := range m.Parts {
		if p.Type == llm.PartImage {
			images++
			continue
		}
		runes += utf8.RuneCountInString(p.Text)
	}
	for _, c := range m.ToolCalls {
		runes += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Arguments)
	}
	return 4 + (runes+3)/4 + 85*images
}

// Budget trims the history to at most Max tokens by Counter, counting the
// agent's system prompt (History.System) too. It always keeps the leading
// system messages and the latest user message; then, newest first, the
// tool rounds and messages after that user message, then whole earlier
// turns, stopping at the first that does not fit, so what is sent is the
// latest user message followed by an unbroken run of the newest messages.
// A tool call is kept or dropped together with its results.
//
// When the always-kept messages alone need more than Max, they are sent
// anyway (and nothing else): the policy never drops the question being
// answered, and the model's server reports a request that is too long.
type Budget struct {
	// Max is the budget in tokens; at least 1.
	Max int
	// Counter counts tokens; nil means Estimate.
	Counter Counter
}

// Validate reports a Max below 1.
func (p Budget) Validate() error {
	if p.Max < 1 {
		return fmt.Errorf("history: Budget.Max is %d; give a budget of at least one token", p.Max)
	}
	return nil
}

// Select trims h.Messages to the budget.
func (p Budget) Select(_ context.Context, h History) (Selection, error) {
	if err := p.Validate(); err != nil {
		return Selection{}, err
	}
	c := p.Counter
	if c == nil {
		c = Estimate
	}
	count := func(msgs []llm.Message) int {
		n := 0
		for _, m := range msgs {
			n += c.Count(m)
		}
		return n
	}
	pinned, turns := split(h.Messages)
	if len(turns) == 0 {
		return Selection{Messages: h.Messages, Summary: h.Summary}, nil
	}
	left := p.Max - count(h.System) - count(pinned)
	latest := turns[len(turns)-1]
	var head []llm.Message // the latest user message, always kept
	if latest[0].Role == llm.RoleUser {
		head, latest = latest[:1], latest[1:]
		left -= count(head)
	}
	// Newest tool rounds of the latest turn, then whole older turns.
	us := units(latest)
	keepFrom := len(us)
	for keepFrom > 0 {
		n := count(us[keepFrom-1])
		if n > left {
			break
		}
		left -= n
		keepFrom--
	}
	tail := concat(us[keepFrom:]...)
	older := len(turns) - 1
	if keepFrom == 0 {
		for older > 0 {
			n := count(turns[older-1])
			if n > left {
				break
			}
			left -= n
			older--
		}
	} else {
		older = len(turns) - 1
	}
	return Selection{
		Messages: concat(pinned, concat(turns[older:len(turns)-1]...), head, tail),
		Summary:  h.Summary,
	}, nil
}
