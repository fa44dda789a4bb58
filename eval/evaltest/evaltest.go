// Package evaltest helps test evaluators and eval sets: a builder for the
// threads evaluators see, trials from a case and a thread, and scripted
// judge models (llm.Model) whose verdicts a test chooses.
package evaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// ThreadBuilder builds an eval.Thread turn by turn. Its methods append and
// return the builder, so a thread reads like the conversation:
//
//	th := evaltest.NewThread().
//		User("Book a room").
//		Call("book_room", `{"day":"mon"}`, "booked").
//		Assistant("Booked for Monday.").
//		Build()
type ThreadBuilder struct {
	th   eval.Thread
	turn int // index in th.Turns of the open turn, -1 before the first
}

// NewThread starts an empty thread with ID "thread-1".
func NewThread() *ThreadBuilder {
	return &ThreadBuilder{th: eval.Thread{ThreadID: "thread-1"}, turn: -1}
}

// User opens a turn with the user's message.
func (b *ThreadBuilder) User(text string) *ThreadBuilder {
	b.th.Messages = append(b.th.Messages, llm.User(text))
	b.th.Turns = append(b.th.Turns, eval.TurnRecord{User: text})
	b.turn = len(b.th.Turns) - 1
	return b
}

// Assistant adds an assistant message; the last one with text is its
// turn's response.
func (b *ThreadBuilder) Assistant(text string) *ThreadBuilder {
	b.th.Messages = append(b.th.Messages, llm.Assistant(text))
	if b.turn >= 0 && text != "" {
		b.th.Turns[b.turn].Response = text
	}
	return b
}

// Call records a tool call that ran ("ok") with its result.
func (b *ThreadBuilder) Call(name, args, result string) *ThreadBuilder {
	return b.add(eval.ToolCall{Name: name, Args: rawArgs(args), Result: result, Status: "ok"})
}

// Failed records a tool call that failed.
func (b *ThreadBuilder) Failed(name, args, reason string) *ThreadBuilder {
	return b.add(eval.ToolCall{Name: name, Args: rawArgs(args), Status: "error", Reason: reason})
}

// Rejected records a tool call a person declined.
func (b *ThreadBuilder) Rejected(name, args, reason string) *ThreadBuilder {
	return b.add(eval.ToolCall{Name: name, Args: rawArgs(args), Status: "rejected", Reason: reason})
}

func (b *ThreadBuilder) add(c eval.ToolCall) *ThreadBuilder {
	id := fmt.Sprintf("call_%d", len(b.th.ToolCalls)+1)
	b.th.Messages = append(b.th.Messages, llm.Assistant("", llm.ToolCall{ID: id, Name: c.Name, Arguments: string(c.Args)}))
	b.th.ToolCalls = append(b.th.ToolCalls, c)
	if b.turn >= 0 {
		b.th.Turns[b.turn].ToolCalls = append(b.th.Turns[b.turn].ToolCalls, c)
	}
	return b
}

// Nodes appends to the node path.
func (b *ThreadBuilder) Nodes(names ...string) *ThreadBuilder {
	b.th.Nodes = append(b.th.Nodes, names...)
	return b
}

// Interrupt records a question of the given kind and its answer (a JSON
// value; "" for none).
func (b *ThreadBuilder) Interrupt(kind, question, answer string) *ThreadBuilder {
	in := eval.Interrupt{ID: fmt.Sprintf("int_%d", len(b.th.Interrupts)+1), Kind: kind, Question: question}
	if answer != "" {
		in.Answer = json.RawMessage(answer)
	}
	b.th.Interrupts = append(b.th.Interrupts, in)
	return b
}

// State sets a state key to a JSON value.
func (b *ThreadBuilder) State(key, value string) *ThreadBuilder {
	if b.th.State == nil {
		b.th.State = map[string]json.RawMessage{}
	}
	b.th.State[key] = json.RawMessage(value)
	return b
}

// Usage sets the usage.
func (b *ThreadBuilder) Usage(u llm.Usage) *ThreadBuilder { b.th.Usage = u; return b }

// Latency sets the wall time.
func (b *ThreadBuilder) Latency(d time.Duration) *ThreadBuilder { b.th.Latency = d; return b }

// Build returns the thread (a copy; the builder can go on).
func (b *ThreadBuilder) Build() *eval.Thread {
	th := b.th
	th.Messages = append([]llm.Message(nil), b.th.Messages...)
	th.ToolCalls = append([]eval.ToolCall(nil), b.th.ToolCalls...)
	th.Turns = append([]eval.TurnRecord(nil), b.th.Turns...)
	return &th
}

func rawArgs(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return nil
	}
	return json.RawMessage(args)
}

// Trial pairs a case and a thread as repetition 0.
func Trial(c *eval.Case, th *eval.Thread) eval.Trial {
	return eval.Trial{Case: c, Thread: th}
}

// Expect returns a tool call expectation (no result, no status).
func Expect(name, args string) eval.ToolCall {
	return eval.ToolCall{Name: name, Args: rawArgs(args)}
}

// Evaluate builds the evaluator a criterion names (evaluator name and
// params JSON, "" for none) and scores the trial with it.
func Evaluate(ctx context.Context, name, params string, t eval.Trial) (eval.Score, error) {
	c := eval.Criterion{Evaluator: name}
	if params != "" {
		c.Params = json.RawMessage(params)
	}
	e, err := eval.New(c)
	if err != nil {
		return eval.Score{}, err
	}
	return e.Evaluate(ctx, t)
}

// Verdict is a judge reply holding a score and its reasoning, as llm_judge
// expects.
func Verdict(score float64, reasoning string) llmtest.Turn {
	return llmtest.JSON(map[string]any{"reasoning": reasoning, "score": score})
}

// Judge returns a scripted judge model that answers with turns in order
// (Verdict, or llmtest.Text for a malformed reply).
func Judge(turns ...llmtest.Turn) *llmtest.Model {
	return llmtest.New(llmtest.WithName("llmtest:judge")).Reply(turns...)
}

// Resolver resolves every judge name to m.
func Resolver(m llm.Model) evaluators.JudgeResolver {
	return func(context.Context, string) (llm.Model, error) { return m, nil }
}

// WithJudge returns ctx carrying a resolver that answers every judge name
// with m.
func WithJudge(ctx context.Context, m llm.Model) context.Context {
	return evaluators.WithJudges(ctx, Resolver(m))
}

// PreferJudge returns a pairwise judge that prefers the response for which
// better returns true, whatever position it is shown in; with neither or
// both preferred it answers "tie".
func PreferJudge(better func(response string) bool) *llmtest.Model {
	m := llmtest.New(llmtest.WithName("llmtest:pairwise"))
	m.When(nil, llmtest.Respond(func(r *llmtest.Request) llmtest.Turn {
		text := r.LastUser()
		first, second := between(text, "<response_1>", "</response_1>"), between(text, "<response_2>", "</response_2>")
		a, b := better(first), better(second)
		winner := "tie"
		switch {
		case a && !b:
			winner = "first"
		case b && !a:
			winner = "second"
		}
		return llmtest.JSON(map[string]any{"reasoning": "scripted preference", "winner": winner})
	})).Repeat()
	return m
}

// PositionJudge returns a pairwise judge that always prefers the response
// shown in position ("first" or "second"), a biased judge the order swap
// must neutralise.
func PositionJudge(position string) *llmtest.Model {
	m := llmtest.New(llmtest.WithName("llmtest:biased"))
	m.When(nil, llmtest.JSON(map[string]any{"reasoning": "always the " + position, "winner": position})).Repeat()
	return m
}

func between(s, open, closing string) string {
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	s = s[i+len(open):]
	if j := strings.Index(s, closing); j >= 0 {
		s = s[:j]
	}
	return strings.TrimSpace(s)
}
