package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

// Detector finds sensitive spans in text. Find returns the [start, end)
// byte offsets of each match, in any order; overlapping matches are
// merged.
type Detector struct {
	// Kind names what is found ("email", "card"...): masks show it.
	Kind string
	// Find returns the spans of s to redact.
	Find func(s string) [][2]int
}

// RegexDetector returns a detector of kind finding re's matches.
func RegexDetector(kind string, re *regexp.Regexp) Detector {
	return Detector{Kind: kind, Find: func(s string) [][2]int {
		var out [][2]int
		for _, m := range re.FindAllStringIndex(s, -1) {
			out = append(out, [2]int{m[0], m[1]})
		}
		return out
	}}
}

var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
	// A phone number: an optional +country code, then 7 to 15 digits
	// separated by single spaces, dots, dashes or bracketed groups.
	phoneRE = regexp.MustCompile(`(?:\+\d{1,3}[ .\-]?)?(?:\(\d{1,4}\)[ .\-]?)?\d{2,4}(?:[ .\-]\d{2,4}){1,4}`)
	cardRE  = regexp.MustCompile(`\b(?:\d[ \-]?){12,18}\d\b`)
	// A national ID in the common ddd-dd-dddd shape.
	nationalIDRE = regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`)
)

// Email detects email addresses.
func Email() Detector { return RegexDetector("email", emailRE) }

// NationalID detects national identity numbers written ddd-dd-dddd.
func NationalID() Detector { return RegexDetector("national_id", nationalIDRE) }

// Phone detects phone numbers: at least 7 digits in groups, with an
// optional country code. Digit runs that are a card number or a national
// ID are left to those detectors.
func Phone() Detector {
	return Detector{Kind: "phone", Find: func(s string) [][2]int {
		var out [][2]int
		for _, m := range phoneRE.FindAllStringIndex(s, -1) {
			d := digits(s[m[0]:m[1]])
			if len(d) < 7 || len(d) > 15 || nationalIDRE.MatchString(s[m[0]:m[1]]) {
				continue
			}
			out = append(out, [2]int{m[0], m[1]})
		}
		return out
	}}
}

// Card detects payment card numbers: 13 to 19 digits, optionally grouped
// by spaces or dashes, that pass the Luhn check.
func Card() Detector {
	return Detector{Kind: "card", Find: func(s string) [][2]int {
		var out [][2]int
		for _, m := range cardRE.FindAllStringIndex(s, -1) {
			if luhn(digits(s[m[0]:m[1]])) {
				out = append(out, [2]int{m[0], m[1]})
			}
		}
		return out
	}}
}

func digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// luhn reports whether the digit string d passes the Luhn checksum.
func luhn(d string) bool {
	if len(d) < 13 || len(d) > 19 {
		return false
	}
	sum := 0
	for i := range len(d) {
		n := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return sum%10 == 0
}

// Strategy says what PII redaction does with a match.
type Strategy string

// The redaction strategies.
const (
	// Mask replaces a match with [REDACTED:kind].
	Mask Strategy = "mask"
	// Hash replaces a match with [kind:first 8 hex digits of its
	// SHA-256], so equal values stay equal without being shown.
	Hash Strategy = "hash"
	// Block refuses the text: user input or model output fails the run
	// with a *BlockedError; a tool result is replaced by a tool error.
	Block Strategy = "block"
)

// BlockedError is returned when PII redaction with the Block strategy
// finds sensitive data.
type BlockedError struct {
	// Where is "input", "output" or "tool result".
	Where string
	// Kinds are the kinds found, sorted.
	Kinds []string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("pii: the %s holds sensitive data (%s) and the policy blocks it", e.Where, strings.Join(e.Kinds, ", "))
}

// PIIConfig configures PII redaction.
type PIIConfig struct {
	// Name names the middleware (default "pii").
	Name string
	// Detectors find the sensitive data (nil: Email, Phone, Card and
	// NationalID).
	Detectors []Detector
	// Strategy is what is done with a match (default Mask).
	Strategy Strategy
	// Input, Output and ToolResults choose what is checked: the user's
	// messages (redacted in state, before any model sees them), the
	// model's replies (saved redacted; their tokens are streamed only
	// once the reply is complete and redacted), and tool results before
	// the model sees them. All false means all three.
	Input, Output, ToolResults bool
}

// PII returns a middleware that redacts sensitive data (see PIIConfig).
func PII(cfg PIIConfig) (Middleware, error) {
	p := &pii{PIIConfig: cfg}
	if p.PIIConfig.Name == "" {
		p.PIIConfig.Name = "pii"
	}
	if p.Detectors == nil {
		p.Detectors = []Detector{Email(), Card(), NationalID(), Phone()}
	}
	if p.Strategy == "" {
		p.Strategy = Mask
	}
	var errs []error
	switch p.Strategy {
	case Mask, Hash, Block:
	default:
		errs = append(errs, fmt.Errorf("pii: unknown strategy %q; use mask, hash or block", p.Strategy))
	}
	for i, d := range p.Detectors {
		if d.Find == nil || d.Kind == "" {
			errs = append(errs, fmt.Errorf("pii: detector %d needs a Kind and a Find function", i))
		}
	}
	if !p.Input && !p.Output && !p.ToolResults {
		p.Input, p.Output, p.ToolResults = true, true, true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

type pii struct{ PIIConfig }

func (p *pii) Name() string { return p.PIIConfig.Name }

// Redact applies the detectors to s and returns the redacted text and the
// kinds found (sorted, unique).
func (p *pii) redact(s string) (string, []string) {
	type span struct {
		a, b int
		kind string
	}
	var spans []span
	for _, d := range p.Detectors {
		for _, m := range d.Find(s) {
			if m[0] < 0 || m[1] > len(s) || m[0] >= m[1] {
				continue
			}
			spans = append(spans, span{m[0], m[1], d.Kind})
		}
	}
	if len(spans) == 0 {
		return s, nil
	}
	// Earlier detectors win an overlap: keep the order stable by start.
	slices.SortStableFunc(spans, func(x, y span) int { return x.a - y.a })
	var b strings.Builder
	var kinds []string
	last := 0
	for _, sp := range spans {
		if sp.a < last {
			continue
		}
		b.WriteString(s[last:sp.a])
		switch p.Strategy {
		case Hash:
			sum := sha256.Sum256([]byte(s[sp.a:sp.b]))
			fmt.Fprintf(&b, "[%s:%s]", sp.kind, hex.EncodeToString(sum[:4]))
		default:
			fmt.Fprintf(&b, "[REDACTED:%s]", sp.kind)
		}
		last = sp.b
		if !slices.Contains(kinds, sp.kind) {
			kinds = append(kinds, sp.kind)
		}
	}
	b.WriteString(s[last:])
	slices.Sort(kinds)
	return b.String(), kinds
}

// redactMessage redacts m's text parts and tool-call arguments, and
// returns the kinds found.
func (p *pii) redactMessage(m llm.Message) (llm.Message, []string) {
	var kinds []string
	m = m.Clone()
	for i, part := range m.Parts {
		if part.Type != llm.PartText {
			continue
		}
		t, k := p.redact(part.Text)
		m.Parts[i].Text = t
		kinds = append(kinds, k...)
	}
	for i, c := range m.ToolCalls {
		// Arguments are JSON: a match inside a string stays inside it,
		// since masks hold no quotes or backslashes.
		t, k := p.redact(c.Arguments)
		m.ToolCalls[i].Arguments = t
		kinds = append(kinds, k...)
	}
	slices.Sort(kinds)
	return m, slices.Compact(kinds)
}

// BeforeTurn redacts the user's messages in state.
func (p *pii) BeforeTurn(_ context.Context, t *Turn) error {
	if !p.Input {
		return nil
	}
	for _, m := range slices.Clone(t.Messages) {
		if m.Role != llm.RoleUser {
			continue
		}
		r, kinds := p.redactMessage(m)
		if len(kinds) == 0 {
			continue
		}
		if p.Strategy == Block {
			return &BlockedError{Where: "input", Kinds: kinds}
		}
		t.Replace(r)
	}
	return nil
}

// WrapModel redacts the reply.
func (p *pii) WrapModel(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error) {
	resp, err := next(ctx, call)
	if err != nil || !p.Output {
		return resp, err
	}
	r, kinds := p.redactMessage(resp.Message)
	if len(kinds) == 0 {
		return resp, nil
	}
	if p.Strategy == Block {
		return nil, &BlockedError{Where: "output", Kinds: kinds}
	}
	out := *resp
	out.Message = r
	return &out, nil
}

// WrapStream holds the reply's text back until the reply is complete, and
// then yields it redacted in one chunk, so no sensitive token reaches the
// stream. Tool-call chunks pass as they come (their arguments are
// redacted in the saved reply).
func (p *pii) WrapStream(_ context.Context, _ *llm.Request, chunks iter.Seq2[llm.Chunk, error]) iter.Seq2[llm.Chunk, error] {
	if !p.Output {
		return chunks
	}
	return func(yield func(llm.Chunk, error) bool) {
		var text strings.Builder
		for c, err := range chunks {
			if err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			text.WriteString(c.Text)
			c.Text = ""
			if c.Reasoning == "" && c.ReasoningSignature == "" && len(c.ToolCalls) == 0 && c.Usage == nil && c.FinishReason == "" && c.Model == "" {
				continue
			}
			if !yield(c, nil) {
				return
			}
		}
		if text.Len() == 0 {
			return
		}
		t, kinds := p.redact(text.String())
		if len(kinds) > 0 && p.Strategy == Block {
			yield(llm.Chunk{}, &BlockedError{Where: "output", Kinds: kinds})
			return
		}
		yield(llm.Chunk{Text: t}, nil)
	}
}

// WrapTool redacts tool results.
func (p *pii) WrapTool(ctx context.Context, call *ToolCall, next ToolHandler) (*ToolResult, error) {
	res, err := next(ctx, call)
	if err != nil || !p.ToolResults || res == nil {
		return res, err
	}
	r, kinds := p.redactMessage(res.Message)
	if len(kinds) == 0 {
		return res, nil
	}
	out := *res
	if p.Strategy == Block {
		out.Message = llm.ToolError(call.Call, fmt.Sprintf("The result of this call held sensitive data (%s), so it was withheld.", strings.Join(kinds, ", ")))
		out.Message.ID = res.Message.ID
		return &out, nil
	}
	out.Message = r
	return &out, nil
}
