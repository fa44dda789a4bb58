package llm

import (
	"errors"
	"fmt"
	"io"
)

// Default limits of a model reply (see Limits). They are far above what
// any model writes in one reply today (a 128k-token answer is about
// 512 KiB), so only a broken or hostile server reaches them.
const (
	DefaultTextBytes         = 8 << 20
	DefaultReasoningBytes    = 8 << 20
	DefaultToolArgumentBytes = 8 << 20
	DefaultToolCalls         = 256
	DefaultBodyBytes         = 32 << 20
)

// Limits bounds what one model reply may hold, so that a server that
// streams forever or sends an endless body fails the call with a
// *LimitError instead of exhausting memory. The Assembler, llm.Call and
// the providers (openai.WithLimits, anthropic.WithLimits) enforce them. A
// zero field means its default; a negative one is an error.
type Limits struct {
	// TextBytes bounds the answer text (default DefaultTextBytes).
	TextBytes int64
	// ReasoningBytes bounds the reasoning text and its signature
	// together (default DefaultReasoningBytes).
	ReasoningBytes int64
	// ToolArgumentBytes bounds the arguments (and names) of all the
	// reply's tool calls together (default DefaultToolArgumentBytes).
	ToolArgumentBytes int64
	// ToolCalls bounds the number of tool calls (default
	// DefaultToolCalls).
	ToolCalls int64
	// BodyBytes bounds the bytes a provider reads for a non-streamed
	// reply (or an error body), and for any one event of a stream
	// (default DefaultBodyBytes).
	BodyBytes int64
}

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{
		TextBytes:         DefaultTextBytes,
		ReasoningBytes:    DefaultReasoningBytes,
		ToolArgumentBytes: DefaultToolArgumentBytes,
		ToolCalls:         DefaultToolCalls,
		BodyBytes:         DefaultBodyBytes,
	}
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *int64 }{
		{&l.TextBytes, &d.TextBytes}, {&l.ReasoningBytes, &d.ReasoningBytes},
		{&l.ToolArgumentBytes, &d.ToolArgumentBytes}, {&l.ToolCalls, &d.ToolCalls},
		{&l.BodyBytes, &d.BodyBytes},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return l
}

// Validate reports a negative field.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"TextBytes", l.TextBytes}, {"ReasoningBytes", l.ReasoningBytes},
		{"ToolArgumentBytes", l.ToolArgumentBytes}, {"ToolCalls", l.ToolCalls}, {"BodyBytes", l.BodyBytes},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("llm: Limits.%s is %d; use a positive limit, or 0 for the default", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// Max returns the field-wise maximum of l and o (defaults applied first).
func (l Limits) Max(o Limits) Limits {
	l, o = l.WithDefaults(), o.WithDefaults()
	return Limits{
		TextBytes:         max(l.TextBytes, o.TextBytes),
		ReasoningBytes:    max(l.ReasoningBytes, o.ReasoningBytes),
		ToolArgumentBytes: max(l.ToolArgumentBytes, o.ToolArgumentBytes),
		ToolCalls:         max(l.ToolCalls, o.ToolCalls),
		BodyBytes:         max(l.BodyBytes, o.BodyBytes),
	}
}

// Limited is implemented by models that know their Limits (the providers,
// and Retry, Fallback and WithTimeout around them). llm.Call assembles
// their streams within those limits.
type Limited interface {
	Limits() Limits
}

// LimitsOf returns m's limits when it is Limited, else DefaultLimits.
func LimitsOf(m Model) Limits {
	if l, ok := m.(Limited); ok {
		return l.Limits().WithDefaults()
	}
	return DefaultLimits()
}

// LimitError is returned when a model reply exceeds one of its Limits. It
// is not retryable: the same request would most likely fail the same way.
type LimitError struct {
	// Limit is the Limits field exceeded ("TextBytes", "ToolCalls", ...).
	Limit string
	// Max is its value.
	Max int64
	// Model names the model, when known.
	Model string
}

var limitWhat = map[string]string{
	"TextBytes":         "bytes of answer text",
	"ReasoningBytes":    "bytes of reasoning",
	"ToolArgumentBytes": "bytes of tool-call arguments",
	"ToolCalls":         "tool calls",
	"BodyBytes":         "bytes in one response body or stream event",
}

func (e *LimitError) Error() string {
	who := "the model's reply"
	if e.Model != "" {
		who = "the reply of model " + e.Model
	}
	return fmt.Sprintf("llm: %s exceeds Limits.%s (%d %s), so the call was stopped: the server may be looping or broken; "+
		"if replies this large are expected, raise Limits.%s (openai.WithLimits, anthropic.WithLimits, or Assembler.Limits)",
		who, e.Limit, e.Max, limitWhat[e.Limit], e.Limit)
}

// Meter counts a streamed reply against Limits without keeping it, for
// providers that pass chunks on rather than assemble them. The zero value
// uses DefaultLimits.
type Meter struct {
	// Limits are the limits enforced (zero fields: defaults).
	Limits Limits
	// Model names the model in errors.
	Model string

	text, reasoning, args int64
	ids                   map[string]struct{}
	indexes               map[int]struct{}
}

// Add counts c and returns a *LimitError once the reply exceeds a limit
// (and on every later call).
func (m *Meter) Add(c Chunk) error {
	l := m.Limits.WithDefaults()
	m.text += int64(len(c.Text))
	m.reasoning += int64(len(c.Reasoning) + len(c.ReasoningSignature))
	for _, d := range c.ToolCalls {
		m.args += int64(len(d.Arguments) + len(d.Name))
		if d.ID != "" && int64(len(m.ids)) <= l.ToolCalls {
			if m.ids == nil {
				m.ids = map[string]struct{}{}
			}
			m.ids[d.ID] = struct{}{}
		}
		if int64(len(m.indexes)) <= l.ToolCalls {
			if m.indexes == nil {
				m.indexes = map[int]struct{}{}
			}
			m.indexes[d.Index] = struct{}{}
		}
	}
	calls := int64(max(len(m.ids), len(m.indexes)))
	switch {
	case m.text > l.TextBytes:
		return &LimitError{Limit: "TextBytes", Max: l.TextBytes, Model: m.Model}
	case m.reasoning > l.ReasoningBytes:
		return &LimitError{Limit: "ReasoningBytes", Max: l.ReasoningBytes, Model: m.Model}
	case m.args > l.ToolArgumentBytes:
		return &LimitError{Limit: "ToolArgumentBytes", Max: l.ToolArgumentBytes, Model: m.Model}
	case calls > l.ToolCalls:
		return &LimitError{Limit: "ToolCalls", Max: l.ToolCalls, Model: m.Model}
	}
	return nil
}

// CheckResponse reports a complete reply that exceeds l, for providers'
// non-streamed replies. model names the model in the error.
func (l Limits) CheckResponse(r *Response, model string) error {
	var m Meter
	m.Limits, m.Model = l, model
	c := Chunk{Text: r.Message.Text(), Reasoning: r.Message.Reasoning, ReasoningSignature: r.Message.ReasoningSignature}
	for i, tc := range r.Message.ToolCalls {
		c.ToolCalls = append(c.ToolCalls, ToolCallDelta{Index: i, Name: tc.Name, Arguments: tc.Arguments})
		if int64(len(c.ToolCalls)) > l.WithDefaults().ToolCalls {
			break
		}
	}
	return m.Add(c)
}

// LimitBody returns body cut off after l.BodyBytes: reading past it fails
// with a *LimitError naming model. Providers wrap non-streamed response
// bodies (and error bodies) with it.
func (l Limits) LimitBody(body io.ReadCloser, model string) io.ReadCloser {
	return &limitedBody{rc: body, left: l.WithDefaults().BodyBytes, max: l.WithDefaults().BodyBytes, model: model}
}

type limitedBody struct {
	rc        io.ReadCloser
	left, max int64
	model     string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &LimitError{Limit: "BodyBytes", Max: b.max, Model: b.model}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, &LimitError{Limit: "BodyBytes", Max: b.max, Model: b.model}
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// LimitEvents returns a streamed body (server-sent events) whose single
// events may not exceed l.BodyBytes: a longer event (bytes between blank
// lines) fails the read with a *LimitError naming model. The stream as a
// whole is not bounded; time bounds it (context, llm.WithTimeout).
func (l Limits) LimitEvents(body io.ReadCloser, model string) io.ReadCloser {
	return &eventBody{rc: body, max: l.WithDefaults().BodyBytes, model: model}
}

type eventBody struct {
	rc       io.ReadCloser
	max, cur int64
	newlines int // consecutive line ends seen ("\r" ignored)
	model    string
}

func (b *eventBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	for _, c := range p[:n] {
		switch c {
		case '\r':
			continue
		case '\n':
			b.newlines++
			if b.newlines >= 2 {
				b.cur = 0
				continue
			}
		default:
			b.newlines = 0
		}
		b.cur++
		if b.cur > b.max {
			return n, &LimitError{Limit: "BodyBytes", Max: b.max, Model: b.model}
		}
	}
	return n, err
}

func (b *eventBody) Close() error { return b.rc.Close() }
