package sqlrouter

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/internal/examples/console"
	"github.com/trellis-agents/trellis/internal/examples/sqlread"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// SampleFile is the name of the sample database under Env.DataDir.
const SampleFile = "sqlrouter-library.db"

// Example describes the example for the CLI: the sample library database
// (created under Env.DataDir when missing, then opened read-only) and the
// router over Env.Model, asked Question.
func Example() examples.Example {
	return examples.Example{
		Name:    "sqlrouter",
		Summary: "a router over discovery, generate-SQL, fix-SQL and execute-and-analyze agents on a read-only SQLite library, passing outputs by {{call:ID}}",
		Script:  Script,
		Open: func(ctx context.Context, env examples.Env) (*examples.Instance, error) {
			path := filepath.Join(env.DataDir, SampleFile)
			if _, err := CreateSampleDB(ctx, path); err != nil {
				return nil, err
			}
			db, err := sqlread.OpenReadOnly(ctx, path)
			if err != nil {
				return nil, err
			}
			g, err := New(env.Model, db)
			if err != nil {
				db.Close()
				return nil, err
			}
			return &examples.Instance{
				Graph:    g,
				Input:    react.Input(Question),
				Handlers: []console.Handler{AskHuman},
				Events:   graph.EventUpdates,
				Print:    printCall,
				Outcome:  Render,
				Close:    db.Close,
			}, nil
		},
	}
}

// AskHuman is a console handler for the router's ask_human questions: it
// shows the question and reads the answer as one line.
func AskHuman(p *console.Prompter, in graph.InterruptInfo) (any, bool, error) {
	q, ok := router.QuestionFrom(in)
	if !ok {
		return nil, false, nil
	}
	fmt.Fprintf(p.Out, "\nThe router asks: %s\n", q.Question)
	line, err := p.Line("Your answer > ")
	if err != nil {
		return nil, true, err
	}
	return line, true, nil
}

// printCall shows each call of the router as it finishes: the call, the
// calls whose outputs it used, and the first line of its result.
func printCall(w io.Writer, ev graph.Event) {
	if ev.Kind != graph.EventUpdates || ev.Namespace != "" {
		return
	}
	recs, _ := react.Calls.In(ev.Update)
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		rec := recs[id]
		uses := ""
		if refs := router.References(rec.Arguments); len(refs) > 0 {
			uses = " using " + strings.Join(refs, ", ")
		}
		fmt.Fprintf(w, "- %s (%s)%s: %s\n", rec.Tool, id, uses, firstLine(rec.Result, 80))
	}
}

// Link is one call of the router in a turn: what was called, the earlier
// calls whose outputs it received by reference, and what came back.
type Link struct {
	CallID string
	Tool   string
	// Uses are the IDs of the calls its arguments referred to.
	Uses []string
	// Result is the call's full output (or error message); Failed says
	// whether the call failed.
	Result string
	Failed bool
}

// Chain returns the calls of the thread's latest turn, in the order the
// router made them, from its call records. Calls not finished (waiting for
// a person, or cut off) are left out.
func Chain(s graph.State) []Link {
	msgs := react.Messages.Get(s)
	start := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			start = i
			break
		}
	}
	var out []Link
	for _, m := range msgs[start:] {
		for _, c := range m.ToolCalls {
			rec, ok := tool.LookupCall(s, react.Calls, c.ID)
			if !ok {
				continue
			}
			out = append(out, Link{CallID: c.ID, Tool: rec.Tool, Uses: router.References(rec.Arguments), Result: rec.Result, Failed: rec.Error != ""})
		}
	}
	return out
}

// Render shows how the latest turn ended (its answer, or why there is
// none yet) and the chain of calls that led there.
func Render(s graph.State) string {
	var b strings.Builder
	o, ok := router.Finished(s)
	switch {
	case !ok:
		b.WriteString("The turn has not finished (it waits for an answer, or it failed).\n")
	case o.Failed():
		fmt.Fprintf(&b, "FAILED (%s matched %s):\n%s\n", o.Tool, o.Pattern, o.Answer)
	case o.Tool != "":
		fmt.Fprintf(&b, "Answer (%s, from %s):\n%s\n", o.Reason, o.Tool, o.Answer)
	default:
		fmt.Fprintf(&b, "Answer (%s):\n%s\n", o.Reason, o.Answer)
	}
	chain := Chain(s)
	if len(chain) == 0 {
		return b.String()
	}
	b.WriteString("\nCall chain:\n")
	width := 0
	for _, l := range chain {
		width = max(width, utf8.RuneCountInString(l.CallID)+utf8.RuneCountInString(l.Tool)+1)
	}
	for i, l := range chain {
		head := l.CallID + " " + l.Tool
		if len(l.Uses) > 0 {
			head = fmt.Sprintf("%-*s  uses %s", width, head, strings.Join(l.Uses, ", "))
		}
		fmt.Fprintf(&b, "%2d. %s", i+1, head)
		mark := "→"
		if l.Failed {
			mark = "✗"
		}
		fmt.Fprintf(&b, "\n      %s %s\n", mark, firstLine(l.Result, 100))
	}
	return b.String()
}

// firstLine returns the first non-empty line of s, cut to n runes.
func firstLine(s string, n int) string {
	lines := slices.DeleteFunc(strings.Split(strings.TrimSpace(s), "\n"), func(l string) bool { return strings.TrimSpace(l) == "" })
	if len(lines) == 0 {
		return "(empty)"
	}
	l := strings.TrimSpace(lines[0])
	if utf8.RuneCountInString(l) > n {
		l = string([]rune(l)[:n]) + "…"
	}
	if len(lines) > 1 {
		l += fmt.Sprintf(" (+%d lines)", len(lines)-1)
	}
	return l
}
