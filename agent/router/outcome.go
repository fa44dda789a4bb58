package router

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Reason says why a turn ended.
type Reason string

// The reasons a turn ends.
const (
	// ReasonAnswer: the router model replied without tool calls.
	ReasonAnswer Reason = "answer"
	// ReasonTerminal: a terminal tool or agent (Config.Terminal, or
	// tool.Stop) succeeded; its output is the answer.
	ReasonTerminal Reason = "terminal"
	// ReasonDirect: the request named an agent (a direct route), whose
	// answer is the answer.
	ReasonDirect Reason = "direct"
	// ReasonError: a result matched one of Config.ErrorPatterns, or the
	// agent of a direct route failed. The answer says so.
	ReasonError Reason = "error"
	// ReasonDeadline: the deadline passed. The answer says what was done.
	ReasonDeadline Reason = "deadline"
	// ReasonUnavailable: the router model's request failed; the answer
	// says politely that the request could not be handled
	// (Prompts.Unavailable) and Error holds the failure. The thread stays
	// usable.
	ReasonUnavailable Reason = "unavailable"
)

// Outcome is how a turn ended. The answer is also the last message of the
// history (an assistant message), so react.Answer reads it too.
type Outcome struct {
	Reason Reason `json:"reason"`
	Answer string `json:"answer"`
	// CallID and Tool name the call that ended the turn (the first, when
	// several did), for every reason but ReasonAnswer and ReasonDeadline.
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Pattern is the error pattern the result matched (ReasonError).
	Pattern string `json:"pattern,omitempty"`
	// Error is the model's failure (ReasonUnavailable), for logs and
	// operators; the answer does not show it.
	Error string `json:"error,omitempty"`
}

// Failed reports whether the turn ended with an error answer (a result
// matching an error pattern, a failed direct route, or an unavailable
// model).
func (o Outcome) Failed() bool { return o.Reason == ReasonError || o.Reason == ReasonUnavailable }

// Finished returns how the thread's latest turn ended. It reports false
// while the turn has not ended (it is waiting for a person, or failed).
func Finished(s graph.State) (Outcome, bool) {
	o := Outcomes.Get(s)
	return o, o.Reason != ""
}

// turn is what the router keeps about the running turn.
type turn struct {
	// Run and Deadline: the deadline in force, and the run that set it
	// (see runMark).
	Run      int       `json:"run,omitempty"`
	Deadline time.Time `json:"deadline,omitzero"`
	// Direct is the ID of the call a direct route made, if any.
	Direct string `json:"direct,omitempty"`
}

// verdict is what one call's result means for the turn.
type verdict struct {
	Reason  Reason `json:"reason"`
	Pattern string `json:"pattern,omitempty"`
}

var (
	turnKey = graph.NewKey[turn]("router_turn")
	// verdictsKey holds the verdicts of the turn's calls that end it, by
	// call ID. Parallel calls each add theirs; the entry node clears it.
	verdictsKey = graph.NewKey("router_verdicts", graph.MergeMap[string, verdict]())
)

// runMark identifies the running run within a thread. graph.Step counts
// the thread's steps and graph.RemainingSteps this run's, so their sum is
// the same in every step of one run and changes when a new run starts
// after steps were committed (a resume, a next turn). It lets a resumed
// run tell that the deadline in state belongs to an earlier run.
//
// A graph.RunID(ctx) would say this directly; until graph has one, this
// sum is the run's identity. (Two runs share a sum only when the first
// committed no step, and then it wrote no deadline either.)
func runMark(ctx context.Context) int {
	return graph.Step(ctx) + graph.RemainingSteps(ctx)
}

// clock returns the deadline in force for the running task, and whether
// it was set by this call (a new run: the caller should store it).
func (r *router) clock(ctx context.Context, t turn) (deadline time.Time, fresh bool) {
	if r.deadline <= 0 {
		return time.Time{}, false
	}
	if t.Run == runMark(ctx) && !t.Deadline.IsZero() {
		return t.Deadline, false
	}
	return time.Now().Add(r.deadline), true
}

// judge reads the verdicts of the calls of the last round and returns the
// outcome that ends the turn, if any.
func (r *router) judge(s graph.State, msgs []llm.Message) (Outcome, bool) {
	vs := verdictsKey.Get(s)
	if len(vs) == 0 {
		return Outcome{}, false
	}
	calls := lastCalls(msgs)
	for _, reason := range []Reason{ReasonError, ReasonDeadline} {
		for _, c := range calls {
			v, ok := vs[c.ID]
			if !ok || v.Reason != reason {
				continue
			}
			if reason == ReasonDeadline {
				return r.timeUp(s, msgs), true
			}
			rec, _ := tool.LookupCall(s, r.calls, c.ID)
			return Outcome{
				Reason:  ReasonError,
				Answer:  fmt.Sprintf("The request could not be completed: %s reported an error.\n\n%s", c.Name, rec.Result),
				CallID:  c.ID,
				Tool:    c.Name,
				Pattern: v.Pattern,
			}, true
		}
	}
	var out Outcome
	var answers []string
	for _, c := range calls {
		v, ok := vs[c.ID]
		if !ok {
			continue
		}
		if out.Reason == "" {
			out = Outcome{Reason: v.Reason, CallID: c.ID, Tool: c.Name}
		}
		rec, _ := tool.LookupCall(s, r.calls, c.ID)
		text := rec.Result
		if c.Name == r.stop {
			text, _ = tool.Stopped(msgs)
		}
		answers = append(answers, text)
	}
	if out.Reason == "" {
		return Outcome{}, false
	}
	out.Answer = strings.Join(answers, "\n\n")
	return out, true
}

// verdict judges one finished call: does its result end the turn?
func (r *router) verdict(t turn, call llm.ToolCall, rec tool.Record) (verdict, bool) {
	for _, re := range r.patterns {
		if re.MatchString(rec.Result) {
			return verdict{Reason: ReasonError, Pattern: re.String()}, true
		}
	}
	switch {
	case call.ID == t.Direct && rec.Error != "":
		return verdict{Reason: ReasonError}, true
	case call.ID == t.Direct:
		return verdict{Reason: ReasonDirect}, true
	case rec.Error == "" && (r.terminal[call.Name] || call.Name == r.stop):
		return verdict{Reason: ReasonTerminal}, true
	}
	return verdict{}, false
}

// timeUp is the outcome of a turn whose deadline passed: what was done,
// and what was not.
func (r *router) timeUp(s graph.State, msgs []llm.Message) Outcome {
	var done, undone []string
	for _, c := range turnCalls(msgs) {
		rec, ok := tool.LookupCall(s, r.calls, c.ID)
		switch {
		case !ok:
			undone = append(undone, fmt.Sprintf("- %s (%s): did not run", c.Name, c.ID))
		case rec.Error != "":
			undone = append(undone, fmt.Sprintf("- %s (%s): %s", c.Name, c.ID, clip(rec.Error, 200)))
		default:
			done = append(done, fmt.Sprintf("- %s (%s): %s", c.Name, c.ID, clip(rec.Result, 300)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Time ran out: this request had %v, and the time passed before the work was finished.", r.deadline)
	if len(done) == 0 {
		b.WriteString("\n\nNothing was finished before the deadline.")
	} else {
		b.WriteString("\n\nDone before the deadline:\n" + strings.Join(done, "\n"))
	}
	if len(undone) > 0 {
		b.WriteString("\n\nNot done:\n" + strings.Join(undone, "\n"))
	}
	return Outcome{Reason: ReasonDeadline, Answer: b.String()}
}

// lastCalls returns the calls of the last assistant message, when the
// history ends with that message's results.
func lastCalls(msgs []llm.Message) []llm.ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		switch m := msgs[i]; m.Role {
		case llm.RoleTool:
			continue
		case llm.RoleAssistant:
			if i < len(msgs)-1 {
				return m.ToolCalls
			}
		}
		return nil
	}
	return nil
}

// turnCalls returns the calls made since the last user message, in order.
func turnCalls(msgs []llm.Message) []llm.ToolCall {
	var calls []llm.ToolCall
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != llm.RoleUser; i-- {
		if len(msgs[i].ToolCalls) > 0 {
			calls = append(slices.Clone(msgs[i].ToolCalls), calls...)
		}
	}
	return calls
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
