// Package llmtest provides Model, a scripted llm.Model for tests: no
// network, deterministic replies, every request recorded.
//
// Script replies in a queue consumed in order, or in rules that answer the
// requests a Matcher picks (by graph node, namespace, last user message,
// tools offered...), so parallel branches and sub-agents get the right
// replies whatever order they run in:
//
//	m := llmtest.New()
//	m.When(llmtest.Node("researcher"), llmtest.ToolCalls(llmtest.Call("search", `{"q":"tides"}`)), llmtest.Text("Tides are ..."))
//	m.When(llmtest.Node("critic"), llmtest.Text("Looks right.")).Repeat()
//	m.Reply(llmtest.Text("Final answer."))
//
// Stream cuts each reply into small chunks shaped like a real provider's
// (tool calls as an ID and name, then argument fragments), so code under
// test exercises the same assembly path as in production.
package llmtest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// DefaultName is a Model's name unless WithName sets another.
const DefaultName = "llmtest:scripted"

// DefaultChunkSize is how many runes of text, reasoning or tool-call
// arguments a streamed chunk carries unless WithChunkSize sets another.
const DefaultChunkSize = 4

// ErrNoReply is wrapped by the error a Model returns when no scripted reply
// is left for a request; the error says which request, where from, and how
// the script was used.
var ErrNoReply = errors.New("llmtest: no scripted reply left")

// Option configures a Model.
type Option func(*Model)

// WithName sets the model's name, "provider:model" (default
// "llmtest:scripted"). Errors and Response.Model use it.
func WithName(name string) Option { return func(m *Model) { m.name = name } }

// WithChunkSize sets how many runes each streamed chunk of text, reasoning
// or tool-call arguments carries (default 4; values below 1 mean the
// default).
func WithChunkSize(runes int) Option { return func(m *Model) { m.chunkSize = runes } }

// WithInterleavedCalls makes Stream interleave the fragments of a reply's
// tool calls (first every call's ID and name, then one argument fragment
// of each call in turn), as providers streaming parallel calls may.
func WithInterleavedCalls() Option { return func(m *Model) { m.interleave = true } }

// Model is a scripted llm.Model. Create one with New, script it with Reply,
// When and Otherwise, call it (directly, through llm.Call, or from graph
// nodes), then inspect Requests. It is safe for concurrent use.
//
// Each request takes the first reply available: from the first rule (in
// the order added) whose matcher accepts the request and that has replies
// left, else from the queue, else the Otherwise reply. With none, the call
// fails with an error wrapping ErrNoReply.
//
// A reply without explicit usage reports an estimate: input tokens = runes
// of the request's messages (text, reasoning, tool calls) / 4, output
// tokens = runes of the reply / 4 (reasoning tokens likewise), rounded up;
// Requests 0, which llm.Call counts as one.
type Model struct {
	name       string
	chunkSize  int
	interleave bool

	mu        sync.Mutex
	rules     []*Rule
	queue     script
	otherwise *script
	requests  []Request
	callSeq   int
}

// New returns a Model with no replies scripted.
func New(opts ...Option) *Model {
	m := &Model{name: DefaultName, chunkSize: DefaultChunkSize}
	for _, o := range opts {
		if o != nil {
			o(m)
		}
	}
	if m.name == "" {
		m.name = DefaultName
	}
	if m.chunkSize < 1 {
		m.chunkSize = DefaultChunkSize
	}
	return m
}

// Name returns the model's name ("llmtest:scripted" by default).
func (m *Model) Name() string { return m.name }

// Reply adds turns to the queue, which answers, in order, the requests no
// rule takes. It returns m for chaining.
func (m *Model) Reply(turns ...Turn) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queue.turns = append(m.queue.turns, m.prepare(turns)...)
	return m
}

// When adds a rule: requests match accepts (a nil matcher accepts all) are
// answered with turns, in order, while any are left. Rules are tried in the
// order added, before the queue; once its turns are used up a rule steps
// aside, unless Repeat was called.
func (m *Model) When(match Matcher, turns ...Turn) *Rule {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &Rule{m: m, index: len(m.rules) + 1, match: match}
	r.s.turns = m.prepare(turns)
	m.rules = append(m.rules, r)
	return r
}

// Otherwise sets the reply given, every time, to requests that no rule and
// nothing left in the queue answer. It returns m for chaining.
func (m *Model) Otherwise(t Turn) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.otherwise = &script{turns: m.prepare([]Turn{t}), repeat: true}
	return m
}

// Rule is a scripted rule added with Model.When.
type Rule struct {
	m     *Model
	index int
	match Matcher
	s     script // guarded by m.mu
}

// Repeat makes the rule give its last reply forever once the others are
// used up (each time with fresh tool-call IDs). It returns r for chaining.
func (r *Rule) Repeat() *Rule {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.s.repeat = true
	return r
}

// Pending reports how many scripted replies (in rules and the queue) have
// not been used yet; replies that repeat count once, until first used.
// A test can assert it is 0 to check that every reply was asked for.
func (m *Model) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.queue.pending()
	for _, r := range m.rules {
		n += r.s.pending()
	}
	return n
}

// Requests returns every request received so far, in arrival order.
// Treat them as read-only.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// LastRequest returns the latest request received, or a zero Request
// (N == 0) when there was none.
func (m *Model) LastRequest() Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return Request{}
	}
	return m.requests[len(m.requests)-1]
}

// Generate answers with the next scripted reply (see Model).
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	t, rec, err := m.begin(ctx, req, false)
	if err != nil {
		return nil, err
	}
	if err := sleep(ctx, t.delay); err != nil {
		return nil, err
	}
	if err := t.failure(m.name); err != nil {
		return nil, err
	}
	resp := m.response(&t, &rec)
	if t.pace > 0 {
		if err := sleep(ctx, t.pace*time.Duration(len(m.chunks(resp)))); err != nil {
			return nil, err
		}
	}
	if t.cutErr != nil {
		return nil, t.cutErr
	}
	return resp, nil
}

// Stream answers with the next scripted reply cut into chunks (see
// WithChunkSize and WithInterleavedCalls): reasoning, then text, then tool
// calls (each call's ID and name first, then its argument fragments, with
// the call's index), then a last chunk with the finish reason, usage and
// model. The request is taken and recorded when iteration starts. It stops
// with the context's error when ctx is done, and at once when the caller
// breaks out.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		t, rec, err := m.begin(ctx, req, true)
		if err == nil {
			err = sleep(ctx, t.delay)
		}
		if err == nil {
			err = t.failure(m.name)
		}
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for i, c := range m.chunks(m.response(&t, &rec)) {
			if t.cutErr != nil && i == t.cutAfter {
				yield(llm.Chunk{}, t.cutErr)
				return
			}
			if err := sleep(ctx, t.pace); err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		if t.cutErr != nil {
			yield(llm.Chunk{}, t.cutErr)
		}
	}
}

// begin records req and takes its reply.
func (m *Model) begin(ctx context.Context, req *llm.Request, streamed bool) (Turn, Request, error) {
	if req == nil {
		return Turn{}, Request{}, fmt.Errorf("llmtest: %s was called with a nil *llm.Request", m.name)
	}
	rec := Request{
		Request:   copyRequest(req),
		Node:      graph.NodeName(ctx),
		Namespace: graph.Namespace(ctx),
		TaskID:    graph.TaskID(ctx),
		Streamed:  streamed,
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec.N = len(m.requests) + 1
	m.requests = append(m.requests, rec)
	t, ok := m.pick(&rec)
	if !ok {
		return Turn{}, rec, m.exhausted(&rec)
	}
	if t.respond != nil {
		built := t.respond(&rec)
		built.respond = nil
		if built.delay == 0 {
			built.delay = t.delay
		}
		if built.pace == 0 {
			built.pace = t.pace
		}
		t = m.prepare([]Turn{built})[0]
	}
	return t, rec, nil
}

// pick takes the reply for r. m.mu must be held.
func (m *Model) pick(r *Request) (Turn, bool) {
	for _, rule := range m.rules {
		if rule.s.left() && (rule.match == nil || rule.match(r)) {
			return rule.s.take(), true
		}
	}
	if m.queue.left() {
		return m.queue.take(), true
	}
	if m.otherwise != nil {
		return m.otherwise.take(), true
	}
	return Turn{}, false
}

// exhausted explains why r got no reply. m.mu must be held.
func (m *Model) exhausted(r *Request) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%v for request %d to %s %s", ErrNoReply, r.N, m.name, r.where())
	if u := r.LastUser(); u != "" {
		if utf8.RuneCountInString(u) > 200 {
			u = string([]rune(u)[:200]) + "..."
		}
		fmt.Fprintf(&b, " (last user message %q)", u)
	}
	for _, rule := range m.rules {
		switch {
		case !rule.s.left():
			fmt.Fprintf(&b, "; rule %d used up after %d replies", rule.index, len(rule.s.turns))
		default:
			fmt.Fprintf(&b, "; rule %d does not match", rule.index)
		}
	}
	if len(m.queue.turns) == 0 {
		b.WriteString("; the queue was never given replies")
	} else {
		fmt.Fprintf(&b, "; the queue is used up after %d replies", len(m.queue.turns))
	}
	b.WriteString("; script more replies with Reply or When, or a default with Otherwise")
	return &noReplyError{msg: b.String()}
}

type noReplyError struct{ msg string }

func (e *noReplyError) Error() string { return e.msg }
func (e *noReplyError) Unwrap() error { return ErrNoReply }

// prepare copies turns and gives their tool calls IDs. m.mu must be held.
func (m *Model) prepare(turns []Turn) []Turn {
	out := make([]Turn, len(turns))
	for i, t := range turns {
		t = t.clone()
		for j := range t.calls {
			if t.calls[j].ID == "" {
				m.callSeq++
				t.calls[j].ID = "call_" + strconv.Itoa(m.callSeq)
			}
		}
		out[i] = t
	}
	return out
}

// response builds the reply to rec from t.
func (m *Model) response(t *Turn, rec *Request) *llm.Response {
	msg := llm.Message{ID: llm.NewID(), Role: llm.RoleAssistant, Reasoning: t.reasoning}
	if t.text != "" {
		msg.Parts = []llm.Part{llm.Text(t.text)}
	}
	msg.ToolCalls = append([]llm.ToolCall(nil), t.calls...)
	finish := t.finish
	if finish == "" {
		finish = llm.FinishStop
		if len(t.calls) > 0 {
			finish = llm.FinishToolCalls
		}
	}
	var u llm.Usage
	if t.usage != nil {
		u = *t.usage
	} else {
		in := 0
		for _, sent := range rec.Messages {
			in += runes(sent)
		}
		u = llm.Usage{
			InputTokens:     tokens(in),
			OutputTokens:    tokens(runes(msg)),
			ReasoningTokens: tokens(utf8.RuneCountInString(t.reasoning)),
		}
	}
	_, name := splitName(m.name)
	return &llm.Response{Message: msg, Usage: u, FinishReason: finish, Model: name}
}

// runes counts the runes of a message's text, reasoning and tool calls.
func runes(m llm.Message) int {
	n := utf8.RuneCountInString(m.Text()) + utf8.RuneCountInString(m.Reasoning)
	for _, c := range m.ToolCalls {
		n += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Arguments)
	}
	return n
}

func tokens(runes int) int64 { return int64(runes+3) / 4 }

// splitName splits "provider:model"; a name without a colon is the model
// of provider "llmtest".
func splitName(name string) (provider, model string) {
	if p, m, ok := strings.Cut(name, ":"); ok {
		return p, m
	}
	return "llmtest", name
}

// sleep waits d, or returns ctx's error if ctx ends first (or already
// has).
func sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// script is a list of replies used in order.
type script struct {
	turns  []Turn
	next   int
	repeat bool // the last turn is given forever
	uses   int  // how many times the last turn was given, when repeating
}

func (s *script) left() bool { return s.next < len(s.turns) }

func (s *script) pending() int { return len(s.turns) - s.next - min(s.uses, 1) }

func (s *script) take() Turn {
	t := s.turns[s.next]
	if !s.repeat || s.next < len(s.turns)-1 {
		s.next++
		return t
	}
	s.uses++
	if s.uses > 1 {
		t = t.clone()
		for i := range t.calls {
			t.calls[i].ID += "_" + strconv.Itoa(s.uses)
		}
	}
	return t
}
