package testplanner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// Name is the app's name.
const Name = "testplanner"

// Summary says in one line what the app does.
const Summary = "test plans for every tool of an MCP server, grounded in rows of a read-only SQLite database, in batches of 5 kept in the store"

// SampleFile is the name of the sample shop database under Env.DataDir.
const SampleFile = "testplanner-shop.db"

// New builds the testplanner app: the graph of NewGraph over cfg, with
// cfg.DB opened from cfg.Database and cfg.Tools served from the sample
// server when cfg.Sample says so. App.Input(name) plans under the store
// namespace's thread element name ("": the run's scope). Runs need a
// store (graph.WithStore).
func New(ctx context.Context, cfg Config) (*apps.App, error) {
	if cfg.Model == nil {
		return nil, errors.New("testplanner: Config.Model is nil; pass the llm.Model that writes the plans (testplanner.ScriptedModel() for the scripted demo)")
	}
	var closers []func() error
	fail := func(err error) (*apps.App, error) {
		apps.Closer(closers...)()
		return nil, err
	}
	if cfg.DB == nil {
		if cfg.Database == "" {
			return nil, errors.New("testplanner: no database; set Config.DB (sqlread.OpenReadOnly) or Config.Database (a SQLite file)")
		}
		if cfg.Sample {
			if _, err := CreateSampleDB(ctx, cfg.Database); err != nil {
				return nil, err
			}
		}
		db, err := sqlread.OpenReadOnly(ctx, cfg.Database)
		if err != nil {
			return nil, err
		}
		cfg.DB = db
		closers = append(closers, db.Close)
	}
	if cfg.Tools == nil && cfg.Sample {
		client, err := ConnectSample(ctx)
		if err != nil {
			return fail(err)
		}
		cfg.Tools = client
		closers = append(closers, client.Close)
	}
	g, err := NewGraph(cfg)
	if err != nil {
		return fail(err)
	}
	return &apps.App{
		Name:    Name,
		Summary: Summary,
		Graph:   g,
		Input:   Input,
		Script:  func() llm.Model { return ScriptedModel() },
		Events:  graph.EventCustom,
		Print: func(w io.Writer, ev graph.Event) {
			if p, ok := ev.Custom.(Progress); ok {
				fmt.Fprintf(w, "  %s\n", p)
			}
		},
		Outcome: func(_ context.Context, s graph.State) string { return Render(Plans(s)) },
		Close:   apps.Closer(closers...),
	}, nil
}

// Settings is the part of Config that trellis.yaml's apps.testplanner
// carries (see Entry); every field is optional.
type Settings struct {
	// Database is where the rows come from: a SQLite file, or a
	// postgres:// URL (read through sqlread.OpenPostgres in Schema);
	// "" : the sample shop database.
	Database string `json:"database,omitempty"`
	Schema   string `json:"schema,omitempty"`
	// CatalogueTable, when set, reads the tool catalogue from this table
	// of Database (TableCatalogue) instead of the sample MCP server.
	CatalogueTable string `json:"catalogue_table,omitempty"`
	// Project and Environment name the store namespace (default "shop",
	// "dev").
	Project     string `json:"project,omitempty"`
	Environment string `json:"environment,omitempty"`
	// BatchSize, Concurrency and MaxQueryRounds are Config's.
	BatchSize      int `json:"batch_size,omitempty"`
	Concurrency    int `json:"concurrency,omitempty"`
	MaxQueryRounds int `json:"max_query_rounds,omitempty"`
	// Prompts override prompt templates by name (PromptSystem,
	// PromptAssess, PromptPlan; see PromptData).
	Prompts map[string]string `json:"prompts,omitempty"`
}

// Entry describes the app to runners: by default the sample shop server
// (in process) and database (under the Env's DataDir), planned for
// project "shop", environment "dev"; Env.Settings (a Settings object)
// chooses other sources and options.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: func() llm.Model { return ScriptedModel() },
		Check: apps.CheckSettings[Settings],
		Start: apps.Start{Input: []apps.InputKey{{Key: "thread", Description: "Names this set of test plans in the store (the fourth part of its namespace). Empty: this thread's own."}}},
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			var st Settings
			if err := env.Decode(&st); err != nil {
				return nil, fmt.Errorf("testplanner: %w", err)
			}
			cfg := Config{Model: env.Model, Middleware: env.Middleware, Database: filepath.Join(env.DataDir, SampleFile), Sample: true,
				Project: cmp.Or(st.Project, "shop"), Environment: cmp.Or(st.Environment, "dev"),
				BatchSize: st.BatchSize, Concurrency: st.Concurrency, MaxQueryRounds: st.MaxQueryRounds, Prompts: st.Prompts}
			var closeDB func() error
			switch {
			case strings.HasPrefix(st.Database, "postgres://"), strings.HasPrefix(st.Database, "postgresql://"):
				pg, err := sqlread.OpenPostgres(ctx, st.Database, st.Schema)
				if err != nil {
					return nil, fmt.Errorf("testplanner: %w", err)
				}
				cfg.DB, cfg.Sample, closeDB = pg, false, pg.Close
			case st.Database != "":
				cfg.Database, cfg.Sample = st.Database, false
			}
			if st.CatalogueTable != "" {
				if cfg.DB == nil {
					db, err := sqlread.OpenReadOnly(ctx, cfg.Database)
					if err != nil {
						return nil, err
					}
					cfg.DB, closeDB = db, db.Close
				}
				cfg.Tools = TableCatalogue{DB: cfg.DB, Table: st.CatalogueTable}
			} else if !cfg.Sample {
				cfg.Tools = nil
				if closeDB != nil {
					closeDB()
				}
				return nil, errors.New("testplanner: settings: a database of your own needs catalogue_table (the tools to plan for); the sample MCP server only matches the sample database")
			}
			app, err := New(ctx, cfg)
			if err != nil {
				if closeDB != nil {
					closeDB()
				}
				return nil, err
			}
			if closeDB != nil {
				app.Close = apps.Closer(app.Close, closeDB)
			}
			return app, nil
		}}
}

// Render shows plans for a person: per tool, the batch, the data rounds
// and each case with its arguments, its expectation and the rows it used.
func Render(plans []Plan) string {
	var b strings.Builder
	if len(plans) == 0 {
		return "No plans.\n"
	}
	for _, p := range plans {
		fmt.Fprintf(&b, "\n== %s: %d cases (batch %d, %d query rounds, %d queries)\n", p.Tool, len(p.Cases), p.Batch+1, p.QueryRounds, p.Queries)
		if p.Note != "" {
			fmt.Fprintf(&b, "   data: %s\n", p.Note)
		}
		for _, c := range p.Cases {
			args, err := json.Marshal(c.Arguments)
			if err != nil {
				args = []byte(fmt.Sprint(c.Arguments))
			}
			mark := ""
			if !c.Grounded {
				mark = "  [no argument value from the rows]"
			}
			fmt.Fprintf(&b, " - %s: %s\n     expect: %s%s\n", c.Name, args, c.Expected, mark)
			if len(c.DataUsed) > 0 {
				fmt.Fprintf(&b, "     rows:   %s\n", strings.Join(c.DataUsed, ", "))
			}
		}
	}
	return b.String()
}
