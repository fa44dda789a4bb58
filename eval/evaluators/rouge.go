package evaluators

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/trellis-agents/trellis/eval"
)

// Rouge1 is the ROUGE-1 F-measure of candidate against reference, computed
// as Google ADK's response_match_score does (Google Research's rouge_score
// with rouge1 and stemming): both texts are lower-cased, every run of
// characters other than a-z and 0-9 becomes a space, words longer than
// three letters are Porter-stemmed (only when both texts are mostly Latin
// script), and the clipped unigram overlap gives precision and recall. Text
// in other scripts has no a-z tokens, so it scores 0, as in ADK.
func Rouge1(candidate, reference string) (precision, recall, f float64) {
	stem := latinScript(candidate) && latinScript(reference)
	c := rougeTokens(candidate, stem)
	r := rougeTokens(reference, stem)
	counts := map[string]int{}
	for _, t := range r {
		counts[t]++
	}
	overlap := 0
	for _, t := range c {
		if counts[t] > 0 {
			counts[t]--
			overlap++
		}
	}
	precision = float64(overlap) / float64(max(len(c), 1))
	recall = float64(overlap) / float64(max(len(r), 1))
	if precision+recall > 0 {
		f = 2 * precision * recall / (precision + recall)
	}
	return precision, recall, f
}

// rougeTokens is rouge_score's default tokenizer.
func rougeTokens(s string, stem bool) []string {
	s = strings.ToLower(s)
	words := strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	if stem {
		for i, w := range words {
			if len(w) > 3 {
				words[i] = porterStem(w)
			}
		}
	}
	return words
}

// latinScript reports whether more than half of s's letters are Latin
// (true for text with no letters), ADK's condition for stemming.
func latinScript(s string) bool {
	letters, latin := 0, 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			letters++
			if unicode.Is(unicode.Latin, r) {
				latin++
			}
		}
	}
	return letters == 0 || float64(latin)/float64(letters) > 0.5
}

// ResponseMatchParams configure "response_match". It has none yet; the
// type keeps unknown params an error.
type ResponseMatchParams struct{}

func newResponseMatch(params json.RawMessage) (eval.Evaluator, error) {
	var p ResponseMatchParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	return &evaluator{name: "response_match", fn: func(_ context.Context, t eval.Trial) (eval.Score, error) {
		exp := t.Case.Expect
		if len(exp.Turns) == 0 {
			want, _, ok := referenceText(exp.Output)
			if !ok {
				return eval.Score{Explanation: "the case has no expected output (expect.output)"}, nil
			}
			_, _, f := Rouge1(finalOutput(t.Thread), want)
			return eval.Score{Value: f, Explanation: fmt.Sprintf("ROUGE-1 F %.3f against the expected output", f)}, nil
		}
		var sum float64
		parts := make([]string, len(exp.Turns))
		turns := turnsOf(t.Thread)
		for i, want := range exp.Turns {
			got := ""
			if i < len(turns) {
				got = turns[i].Response
			}
			_, _, f := Rouge1(got, want.Response)
			sum += f
			parts[i] = fmt.Sprintf("%.3f", f)
		}
		v := sum / float64(len(exp.Turns))
		return eval.Score{Value: v, Explanation: fmt.Sprintf("mean ROUGE-1 F %.3f over %d turns (%s)", v, len(exp.Turns), strings.Join(parts, ", "))}, nil
	}}, nil
}
