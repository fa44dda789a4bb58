package middleware

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// ToolCounts is the state a tool-call limit keeps: the calls that ran,
// per tool, in the current run (turn) and on the thread.
type ToolCounts struct {
	Run    map[string]int `json:"run,omitempty"`
	Thread map[string]int `json:"thread,omitempty"`
	// ResetRun, in a write, clears Run before the write's counts are
	// added. It is never set in stored state.
	ResetRun bool `json:"reset_run,omitempty"`
	// End is the final message of a run the limit ended (EndRun), until
	// the agent ends the turn with it. The first end of a round is kept.
	End string `json:"end,omitempty"`
	// ClearEnd, in a write, clears End. It is never set in stored state.
	ClearEnd bool `json:"clear_end,omitempty"`
}

func addCounts(cur, upd ToolCounts) (ToolCounts, error) {
	out := ToolCounts{Thread: maps.Clone(cur.Thread), End: cur.End}
	if !upd.ResetRun {
		out.Run = maps.Clone(cur.Run)
	}
	switch {
	case upd.ClearEnd:
		out.End = ""
	case out.End == "":
		out.End = upd.End
	}
	add := func(dst *map[string]int, src map[string]int) {
		for k, v := range src {
			if *dst == nil {
				*dst = map[string]int{}
			}
			(*dst)[k] += v
		}
	}
	add(&out.Run, upd.Run)
	add(&out.Thread, upd.Thread)
	return out, nil
}

// ToolLimitConfig configures a tool-call limit.
type ToolLimitConfig struct {
	// Name names the middleware and its state key (default
	// "tool_limit", or "tool_limit_TOOL" with a Tool); give each limit of
	// one agent its own.
	Name string
	// Tool is the tool limited; "" limits every tool, each counted on
	// its own.
	Tool string
	// RunLimit bounds the calls of the tool in one run: from a user
	// message to the answer (0: no bound).
	RunLimit int
	// ThreadLimit bounds the calls of the tool over the thread's life
	// (0: no bound).
	ThreadLimit int
	// EndRun ends the run when a call reaches a limit, instead of only
	// refusing the call and letting the model go on: the call is refused
	// as usual (its tool message and record say why), the other calls of
	// the round finish, and then the agent ends the turn with EndMessage
	// as its final reply, without asking the model again (LangChain's
	// exit_behavior "end").
	EndRun bool
	// EndMessage is the final reply of a run EndRun ended (default: a
	// sentence naming the tool and the limit).
	EndMessage string
}

// ToolLimit returns a middleware that refuses a tool's calls past a limit
// per run or per thread. The counts live in graph state (ToolLimit's key,
// see Stateful), so they survive a crash, an interrupt and a resume; the
// run count is cleared at the start of each turn. Calls of one reply are
// counted in order, so parallel calls cannot overshoot: the first calls
// up to the limit run and the rest are answered with a tool error that
// tells the model the limit is reached.
func ToolLimit(cfg ToolLimitConfig) (Middleware, error) {
	var errs []error
	if cfg.RunLimit < 0 || cfg.ThreadLimit < 0 {
		errs = append(errs, fmt.Errorf("tool limit: limits must not be negative (run %d, thread %d)", cfg.RunLimit, cfg.ThreadLimit))
	}
	if cfg.RunLimit == 0 && cfg.ThreadLimit == 0 {
		errs = append(errs, errors.New("tool limit: set RunLimit or ThreadLimit (or both)"))
	}
	if cfg.Tool != "" && !llm.ValidToolName(cfg.Tool) {
		errs = append(errs, fmt.Errorf("tool limit: %q is not a valid tool name", cfg.Tool))
	}
	if cfg.Name == "" {
		cfg.Name = "tool_limit"
		if cfg.Tool != "" {
			cfg.Name += "_" + cfg.Tool
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &toolLimit{cfg: cfg, key: graph.NewKey(cfg.Name+"_counts", graph.Reduce("tool_counts", addCounts))}, nil
}

type toolLimit struct {
	cfg ToolLimitConfig
	key *graph.Key[ToolCounts]
}

func (l *toolLimit) Name() string { return l.cfg.Name }

// StateKeys returns the key holding the counts.
func (l *toolLimit) StateKeys() []graph.AnyKey { return []graph.AnyKey{l.key} }

// Key returns the key holding the counts, to read them from a run's state.
func (l *toolLimit) Key() *graph.Key[ToolCounts] { return l.key }

// BeforeTurn clears the run count.
func (l *toolLimit) BeforeTurn(_ context.Context, t *Turn) error {
	if l.cfg.RunLimit > 0 && len(l.key.Get(t.State).Run) > 0 {
		t.Write(l.key.Set(ToolCounts{ResetRun: true}))
	}
	return nil
}

// WrapTool refuses calls past the limit and counts the others.
func (l *toolLimit) WrapTool(ctx context.Context, call *ToolCall, next ToolHandler) (*ToolResult, error) {
	name := call.Call.Name
	if l.cfg.Tool != "" && name != l.cfg.Tool {
		return next(ctx, call)
	}
	// Calls of the same reply before this one are counted as if run:
	// they are checked against the same snapshot.
	earlier := 0
	for _, c := range call.Batch {
		if c.ID == call.Call.ID {
			break
		}
		if c.Name == name {
			earlier++
		}
	}
	counts := l.key.Get(call.State)
	if lim := l.cfg.RunLimit; lim > 0 && counts.Run[name]+earlier >= lim {
		return l.refuse(call.Call, fmt.Sprintf("%d times per run", lim),
			fmt.Sprintf("tool %q reached its run limit (%d)", name, lim)), nil
	}
	if lim := l.cfg.ThreadLimit; lim > 0 && counts.Thread[name]+earlier >= lim {
		return l.refuse(call.Call, fmt.Sprintf("%d times in this conversation", lim),
			fmt.Sprintf("tool %q reached its thread limit (%d)", name, lim)), nil
	}
	res, err := next(ctx, call)
	if err != nil || res == nil {
		return res, err
	}
	one := map[string]int{name: 1}
	out := *res
	out.Writes = append(append([]graph.Write(nil), res.Writes...), l.key.Set(ToolCounts{Run: one, Thread: one}))
	return &out, nil
}

// refuse answers a call past the limit (at most "n times per run", say)
// and, with EndRun, records the end of the run.
func (l *toolLimit) refuse(call llm.ToolCall, most, problem string) *ToolResult {
	if !l.cfg.EndRun {
		return Refuse(call,
			fmt.Sprintf("Error: the tool %q may be called at most %s, and that limit is reached. Go on without it, or answer with what you have.", call.Name, most),
			problem)
	}
	res := Refuse(call,
		fmt.Sprintf("Error: the tool %q may be called at most %s, and that limit is reached, so the run ends here.", call.Name, most),
		problem+"; the run was ended")
	end := l.cfg.EndMessage
	if end == "" {
		end = fmt.Sprintf("I stopped here: the tool %q may be called at most %s, and that limit was reached before the task was finished.", call.Name, most)
	}
	res.Writes = append(res.Writes, l.key.Set(ToolCounts{End: end}))
	return res
}

// Ended returns the end a call past the limit recorded (EndRun).
func (l *toolLimit) Ended(s graph.State) (string, graph.Write, bool) {
	end := l.key.Get(s).End
	return end, l.key.Set(ToolCounts{ClearEnd: true}), end != ""
}
