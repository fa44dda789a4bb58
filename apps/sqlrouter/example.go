package sqlrouter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/tool"
)

// SampleFile is the name of the sample database under Env.DataDir.
const SampleFile = "sqlrouter-library.db"

// Name is the app's name.
const Name = "sqlrouter"

// Summary says in one line what the app does.
const Summary = "a router over discovery, generate-SQL, fix-SQL and execute-and-analyze agents on a read-only SQLite library, passing outputs by {{call:ID}}"

// Config configures the sqlrouter app. Model and a database (DB or
// Database) are required; every other field has the default its comment
// names.
type Config struct {
	// Model plays the router and its agents (required; Script() for the
	// scripted demo model).
	Model llm.Model
	// AgentModels gives named sub-agents (DiscoveryAgent, GenerateAgent,
	// FixAgent, ExecuteAgent) a model of their own (default: none, all use
	// Model).
	AgentModels map[string]llm.Model
	// AgentSettings give sub-agents (by name: a default one or an
	// AgentSpec) model settings of their own: a model, temperature,
	// top-p, max tokens, reasoning effort. A field set here wins over
	// the AgentSpec's Settings; a model here wins over AgentModels.
	AgentSettings map[string]llm.Settings
	// RouterSettings are the routing phase's settings (router.Config's
	// Settings; zero: Model with the provider's defaults).
	RouterSettings llm.Settings
	// History is the message-history policy of the routing call (nil:
	// the whole conversation); each sub-agent sees only its task.
	History history.Policy
	// Middleware wraps the sub-agents' model and tool calls, in order;
	// the router's own calls go through those of them that only wrap
	// calls (middleware.CallWrappers: no turn hooks, state or tools).
	Middleware []middleware.Middleware
	// Resolve turns the model names of AgentSpec.Settings into models
	// (apps.Env.Resolve in a runner; nil: naming a model is an error).
	Resolve func(name string) (llm.Model, error)
	// DB is an open read-only database to answer from. When nil, Database
	// is opened read-only.
	DB sqlread.Database
	// Database is a SQLite file, used when DB is nil; the App closes it.
	Database string
	// Sample creates the sample library at Database when the file is
	// missing (default false: a missing file is an error).
	Sample bool
	// Request is the question App.Input("") asks (default Question).
	Request string

	// Agents are the sub-agents as data (nil: DefaultAgents()).
	Agents []AgentSpec
	// Extra are more sub-agents of any kind: any compiled graph as a
	// router.Agent, or a function through RunnableAgent (another
	// assistant, a service). ExtraTerminal names those whose answer ends
	// the turn.
	Extra         []router.Agent
	ExtraTerminal []string
	// RouterTools are the database tools the router has itself, by name
	// among ToolNames (nil: validate_sql).
	RouterTools []string
	// Routes are route keys: "@key task" goes straight to agent
	// Routes[key] without the router model (each agent's name is a key
	// too; nil: the names only).
	Routes map[string]string
	// ErrorPatterns replace RefusedPattern and UnavailablePattern when
	// set.
	ErrorPatterns []string
	// Prompts override prompt templates by name (RouterPromptName, or a
	// default agent's name); the templates see PromptData.
	Prompts map[string]string
	// Deadline bounds each run (0: Deadline).
	Deadline time.Duration
}

// New builds the sqlrouter app.
func New(ctx context.Context, cfg Config) (*apps.App, error) {
	if cfg.Model == nil {
		return nil, errors.New("sqlrouter: Config.Model is nil; pass the llm.Model that plays the router and its agents (sqlrouter.Script() for the scripted demo)")
	}
	closeDB := func() error { return nil }
	db := cfg.DB
	if db == nil {
		if cfg.Database == "" {
			return nil, errors.New("sqlrouter: no database; set Config.DB (sqlread.OpenReadOnly) or Config.Database (a SQLite file)")
		}
		if cfg.Sample {
			if _, err := CreateSampleDB(ctx, cfg.Database); err != nil {
				return nil, err
			}
		}
		ro, err := sqlread.OpenReadOnly(ctx, cfg.Database)
		if err != nil {
			return nil, err
		}
		db, closeDB = ro, ro.Close
	}
	if cfg.Request == "" {
		cfg.Request = Question
	}
	cfg.DB = db
	g, err := Build(cfg)
	if err != nil {
		closeDB()
		return nil, err
	}
	return &apps.App{
		Name:    Name,
		Summary: Summary,
		Graph:   g,
		Input: func(request string) graph.Update {
			if request == "" {
				request = cfg.Request
			}
			return react.Input(request)
		},
		Script:  Script,
		Events:  graph.EventUpdates,
		Print:   printCall,
		Outcome: func(_ context.Context, s graph.State) string { return Render(s) },
		Close:   apps.Closer(closeDB),
	}, nil
}

// Entry describes the app to runners. Env.Settings, when set, is a
// Settings object (trellis.yaml's apps.sqlrouter): its database (a SQLite
// file or a postgres:// URL), agents, routes, prompts and deadline. The
// default database is the sample library under the Env's DataDir
// (created when missing), opened read-only.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: Script, Check: apps.CheckSettings[Settings],
		Start: apps.Start{Examples: []string{Question, "Which members borrowed more than five books last year?", "What tables does the library database have?"}},
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			var st Settings
			if err := env.Decode(&st); err != nil {
				return nil, fmt.Errorf("sqlrouter: %w", err)
			}
			cfg, err := st.apply(Config{Model: env.Model, Database: filepath.Join(env.DataDir, SampleFile), Sample: true, Resolve: env.Resolve,
				Middleware: env.Middleware})
			if err != nil {
				return nil, err
			}
			for _, aa := range st.Assistants {
				if env.Assistant == nil {
					return nil, fmt.Errorf("sqlrouter: settings name assistant %s as a sub-agent, but only a service (trellis serve) has assistants", aa.Assistant)
				}
				g, err := env.Assistant(ctx, aa.Assistant)
				if err != nil {
					return nil, fmt.Errorf("sqlrouter: sub-agent %s: %w", aa.Name, err)
				}
				cfg.Extra = append(cfg.Extra, router.Agent{Name: aa.Name, Description: aa.Description, Graph: g})
				if aa.Terminal {
					cfg.ExtraTerminal = append(cfg.ExtraTerminal, aa.Name)
				}
			}
			switch {
			case strings.HasPrefix(st.Database, "postgres://"), strings.HasPrefix(st.Database, "postgresql://"):
				pg, err := sqlread.OpenPostgres(ctx, st.Database, st.Schema)
				if err != nil {
					return nil, fmt.Errorf("sqlrouter: %w", err)
				}
				cfg.DB = pg
				app, err := New(ctx, cfg)
				if err != nil {
					pg.Close()
					return nil, err
				}
				app.Close = apps.Closer(app.Close, pg.Close)
				return app, nil
			case st.Database != "":
				cfg.Database, cfg.Sample = st.Database, false
			}
			return New(ctx, cfg)
		}}
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
	// TaskID is the router task the call ran in (sub-agents' CallEvents
	// name it as their ParentTask).
	TaskID string
	// Agent is the sub-agent that made the call, for a sub-agent's call
	// (Tree); "" for the router's own.
	Agent string
	// Calls are the calls of the sub-agent this call ran (Tree only).
	Calls []Link
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
			out = append(out, Link{CallID: c.ID, Tool: rec.Tool, TaskID: rec.TaskID, Uses: router.References(rec.Arguments), Result: rec.Result, Failed: rec.Error != ""})
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
