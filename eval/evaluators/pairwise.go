package evaluators

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

// Pairwise winners.
const (
	WinnerA   = "A"
	WinnerB   = "B"
	WinnerTie = "tie"
)

// PairwiseInput is what a pairwise judge compares: two outputs for the same
// case (A from the baseline experiment, B from the candidate).
type PairwiseInput struct {
	// Question is the user's request (the case's input).
	Question string
	// A and B are the two final outputs.
	A, B string
	// Rubric says what a better answer does (default: more correct,
	// complete and helpful).
	Rubric string
	// Reference is the expected answer, when the case has one.
	Reference string
}

// Preference is a pairwise verdict.
type Preference struct {
	// Winner is WinnerA, WinnerB or WinnerTie.
	Winner string `json:"winner"`
	// Reasoning is the judge's reasoning for both orders.
	Reasoning string `json:"reasoning"`
	// Consistent is true when both orders gave the same verdict; a judge
	// that changed its mind with the order yields a tie.
	Consistent bool `json:"consistent"`
}

// pairReply is the judge's reply for one order.
type pairReply struct {
	Reasoning string `json:"reasoning"`
	// Winner is "first", "second" or "tie".
	Winner string `json:"winner"`
}

const pairSystem = "You compare two responses of an AI assistant to the same request. " +
	"Judge only by the rubric; the order and length of the responses must not sway you. " +
	`Reply with a JSON object: {"reasoning": "<why>", "winner": "first" | "second" | "tie"}.`

// Pairwise asks judge which of two outputs is better, twice — A first, then
// B first — so that a preference for a position cancels out: the verdict
// is the winner both orders agree on, else a tie. A malformed reply is
// corrected once, as for llm_judge.
func Pairwise(ctx context.Context, judge llm.Model, in PairwiseInput) (Preference, error) {
	if judge == nil {
		return Preference{}, fmt.Errorf("pairwise: %w", ErrNoJudge)
	}
	rubric := in.Rubric
	if rubric == "" {
		rubric = "The better response answers the request more correctly, completely and helpfully, and claims nothing that did not happen."
	}
	ask := func(first, second string) (string, string, error) {
		req := &llm.Request{Messages: []llm.Message{llm.System(pairSystem), llm.User(pairPrompt(in, rubric, first, second))}}
		r, err := askJSON(ctx, judge, req, func(r pairReply) string {
			switch strings.ToLower(strings.TrimSpace(r.Winner)) {
			case "first", "second", "tie":
				return ""
			}
			return fmt.Sprintf("field `winner` is %q; it must be \"first\", \"second\" or \"tie\"", r.Winner)
		})
		if err != nil {
			return "", "", err
		}
		return strings.ToLower(strings.TrimSpace(r.Winner)), strings.TrimSpace(r.Reasoning), nil
	}
	w1, why1, err := ask(in.A, in.B)
	if err != nil {
		return Preference{}, fmt.Errorf("pairwise: %w", err)
	}
	w2, why2, err := ask(in.B, in.A)
	if err != nil {
		return Preference{}, fmt.Errorf("pairwise: %w", err)
	}
	v1 := map[string]string{"first": WinnerA, "second": WinnerB, "tie": WinnerTie}[w1]
	v2 := map[string]string{"first": WinnerB, "second": WinnerA, "tie": WinnerTie}[w2]
	p := Preference{Winner: WinnerTie, Consistent: v1 == v2,
		Reasoning: fmt.Sprintf("A shown first: %s (%s). B shown first: %s (%s).", v1, why1, v2, why2)}
	if p.Consistent {
		p.Winner = v1
	}
	return p, nil
}

func pairPrompt(in PairwiseInput, rubric, first, second string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<rubric>\n%s\n</rubric>\n\n<request>\n%s\n</request>\n\n", rubric, boundText(in.Question, maxTranscript/4))
	if in.Reference != "" {
		fmt.Fprintf(&b, "<reference_answer>\n%s\n</reference_answer>\n\n", boundText(in.Reference, maxTranscript/4))
	}
	fmt.Fprintf(&b, "<response_1>\n%s\n</response_1>\n\n<response_2>\n%s\n</response_2>\n", boundText(first, maxTranscript/3), boundText(second, maxTranscript/3))
	return b.String()
}
