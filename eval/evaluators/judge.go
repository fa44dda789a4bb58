package evaluators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/llm"
)

// JudgeResolver returns the judge model a criterion names ("" asks for the
// operator's default judge). The caller supplies it — the CLI resolves
// names against its model configuration, a server against its declared
// models — so this package never imports the server.
type JudgeResolver func(ctx context.Context, model string) (llm.Model, error)

type judgesKey struct{}

// WithJudges returns a context carrying r; llm_judge resolves its model
// through the resolver of the context it is evaluated with.
func WithJudges(ctx context.Context, r JudgeResolver) context.Context {
	return context.WithValue(ctx, judgesKey{}, r)
}

// JudgesFrom returns the resolver WithJudges put in ctx, or nil.
func JudgesFrom(ctx context.Context) JudgeResolver {
	r, _ := ctx.Value(judgesKey{}).(JudgeResolver)
	return r
}

// ErrNoJudge is wrapped by the error of a judge evaluated with no
// JudgeResolver in its context.
var ErrNoJudge = errors.New("no judge model resolver: the caller must supply one with evaluators.WithJudges")

func resolveJudge(ctx context.Context, name string) (llm.Model, error) {
	r := JudgesFrom(ctx)
	if r == nil {
		return nil, ErrNoJudge
	}
	m, err := r(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("judge model %q: %w", name, err)
	}
	if m == nil {
		return nil, fmt.Errorf("judge model %q: the resolver returned no model", name)
	}
	return m, nil
}

// Scale is the range of a judge's score; the verdict is normalised to
// [0, 1] as (score-Min)/(Max-Min).
type Scale struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// LLMJudgeParams configure "llm_judge".
type LLMJudgeParams struct {
	// Model names the judge model ("" for the resolver's default).
	Model string `json:"model,omitempty"`
	// Rubric says what a good answer does; without it, the case's
	// Expect.Rubric. One of the two is required.
	Rubric string `json:"rubric,omitempty"`
	// Scale is the score range (default 1 to 5).
	Scale *Scale `json:"scale,omitempty"`
	// Trajectory shows the judge the tool calls and questions, not just the
	// conversation's text.
	Trajectory bool `json:"trajectory,omitempty"`
}

// verdict is the judge's reply.
type verdict struct {
	Reasoning string  `json:"reasoning"`
	Score     float64 `json:"score"`
}

// maxTranscript bounds the conversation shown to a judge (runes); the
// start and the end are kept.
const maxTranscript = 24000

func newLLMJudge(params json.RawMessage) (eval.Evaluator, error) {
	var p LLMJudgeParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	scale := Scale{Min: 1, Max: 5}
	if p.Scale != nil {
		scale = *p.Scale
	}
	if scale.Max <= scale.Min {
		return nil, fmt.Errorf("llm_judge: scale max %d must exceed min %d", scale.Max, scale.Min)
	}
	return &evaluator{name: "llm_judge", fn: func(ctx context.Context, t eval.Trial) (eval.Score, error) {
		rubric := p.Rubric
		if rubric == "" {
			rubric = t.Case.Expect.Rubric
		}
		if rubric == "" {
			return eval.Score{Explanation: "no rubric: set params.rubric or expect.rubric"}, nil
		}
		m, err := resolveJudge(ctx, p.Model)
		if err != nil {
			return eval.Score{}, fmt.Errorf("llm_judge: %w", err)
		}
		req := &llm.Request{Messages: []llm.Message{
			llm.System(judgeSystem),
			llm.User(judgePrompt(t, rubric, scale, p.Trajectory)),
		}}
		v, err := askJSON(ctx, m, req, func(v verdict) string {
			if v.Score < float64(scale.Min) || v.Score > float64(scale.Max) {
				return fmt.Sprintf("field `score` is %v, outside the scale %d to %d", v.Score, scale.Min, scale.Max)
			}
			if strings.TrimSpace(v.Reasoning) == "" {
				return "field `reasoning` is empty: explain the score"
			}
			return ""
		})
		if err != nil {
			return eval.Score{}, fmt.Errorf("llm_judge: %w", err)
		}
		norm := (v.Score - float64(scale.Min)) / float64(scale.Max-scale.Min)
		return eval.Score{Value: norm, Explanation: fmt.Sprintf("%g/%d: %s", v.Score, scale.Max, strings.TrimSpace(v.Reasoning))}, nil
	}}, nil
}

const judgeSystem = "You are a strict, impartial judge of an AI assistant's work. " +
	"Score it against the rubric only, and reply with a JSON object: " +
	`{"reasoning": "<why, in two or three sentences>", "score": <number>}.`

func judgePrompt(t eval.Trial, rubric string, scale Scale, trajectory bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<rubric>\n%s\n</rubric>\n\n", rubric)
	fmt.Fprintf(&b, "Score from %d (fails the rubric) to %d (meets it fully).\n\n", scale.Min, scale.Max)
	b.WriteString("<conversation>\n")
	b.WriteString(boundText(transcript(t.Thread, trajectory), maxTranscript))
	b.WriteString("\n</conversation>\n\n")
	if ref, _, ok := referenceText(t.Case.Expect.Output); ok {
		fmt.Fprintf(&b, "<reference_answer>\n%s\n</reference_answer>\n\n", boundText(ref, maxTranscript/4))
	}
	fmt.Fprintf(&b, "<final_response>\n%s\n</final_response>\n", boundText(finalOutput(t.Thread), maxTranscript/4))
	return b.String()
}

// transcript renders the conversation for a judge: user and assistant
// text, and with trajectory the tool calls (with their status) and the
// questions asked.
func transcript(th *eval.Thread, trajectory bool) string {
	var b strings.Builder
	for _, m := range th.Messages {
		switch m.Role {
		case llm.RoleUser:
			fmt.Fprintf(&b, "User: %s\n", m.Text())
		case llm.RoleAssistant:
			if s := m.Text(); s != "" {
				fmt.Fprintf(&b, "Assistant: %s\n", s)
			}
		}
	}
	if trajectory {
		for _, c := range th.ToolCalls {
			status := orDefault(c.Status, "ok")
			fmt.Fprintf(&b, "Tool call: %s(%s) -> %s", c.Name, clip(string(c.Args), 400), status)
			if c.Reason != "" {
				fmt.Fprintf(&b, " (%s)", clip(c.Reason, 200))
			}
			if c.Result != "" {
				fmt.Fprintf(&b, ": %s", clip(c.Result, 400))
			}
			b.WriteString("\n")
		}
		for _, in := range th.Interrupts {
			fmt.Fprintf(&b, "Question asked (%s): %s; answer: %s\n", orDefault(in.Kind, "question"), clip(in.Question, 400), clip(string(in.Answer), 200))
		}
	}
	return b.String()
}

// boundText keeps the first and last parts of s within n runes.
func boundText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	half := n / 2
	return string(r[:half]) + "\n[… cut …]\n" + string(r[len(r)-half:])
}

// askJSON asks m for a T, checks it with check (a problem or ""), and
// corrects a malformed or unusable reply once before failing.
func askJSON[T any](ctx context.Context, m llm.Model, req *llm.Request, check func(T) string) (T, error) {
	var zero T
	if schema, err := llm.SchemaFor[T](); err == nil {
		req.ResponseFormat = &llm.ResponseFormat{Name: "verdict", Schema: schema}
	}
	zeroTemp := 0.0
	req.Temperature = &zeroTemp
	var problem, reply string
	for attempt := range 2 {
		resp, err := llm.Call(ctx, m, req)
		if err != nil {
			return zero, err
		}
		reply = resp.Message.Text()
		v, err := llm.Decode[T](reply)
		var correction string
		if derr, ok := errors.AsType[*llm.DecodeError](err); ok {
			problem, correction = derr.Error(), derr.Correction()
		} else if err != nil {
			return zero, err
		} else if problem = check(v); problem != "" {
			correction = "Your reply could not be used:\n- " + problem + "\nReply again with only the corrected JSON object, with no other text."
		} else {
			return v, nil
		}
		if attempt == 0 {
			req.Messages = append(append([]llm.Message(nil), req.Messages...), resp.Message, llm.User(correction))
		}
	}
	return zero, fmt.Errorf("judge model %s gave no usable verdict after a correction: %s (last reply %q)", m.Name(), problem, clip(reply, 200))
}
