// Package sqlrouter is the SQL router app: a router agent
// (agent/router) answers questions about a sample library database by
// calling four sub-agents, each a ReAct agent with its own prompt and tools:
//
//   - discovery finds the tables and columns a question needs (list_tables,
//     describe_table, sample_rows);
//   - generate_sql writes one SELECT for a question from the schema it is
//     handed (describe_table, validate_sql);
//   - fix_sql repairs a query given the error SQLite gave for it
//     (describe_table, validate_sql);
//   - execute_sql runs a query and summarises the rows (query_sql). It is
//     terminal: its answer ends the turn.
//
// The router also has validate_sql itself, to check a generated query
// before running it. Outputs travel between calls as call-chain references:
// the router hands the discovery output to generate_sql as {{call:ID}}, the
// generated query to validate_sql and, when it is invalid, the query and
// the error to fix_sql, and the valid query to execute_sql. The records of
// the router's calls keep those references, so the chain can be shown
// (Chain).
//
// Every statement goes through the shared read-only layer (sqlread): the
// database file is opened read-only and anything but a single read is
// refused before SQLite sees it. A refused write, or a discovery answer
// saying the data is not there, matches one of the router's error patterns
// and ends the turn with an error answer.
//
// A request of the form "@agent task" goes straight to that agent, without
// the router model (router.Mentions).
//
// # Embedding
//
// New(ctx, Config{Model, Database or DB}) builds the app; AgentModels
// gives sub-agents models of their own. Runs need a checkpointer and a
// thread (the router may ask a person). See Example and Config.
package sqlrouter

import (
	"errors"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Question is the question the example asks.
const Question = "Which book genres were borrowed most in 2025? Give the number of loans for each genre."

// The sub-agents' names: the names the router model calls them by, the
// nodes their calls run in, and the prefixes of their namespaces
// ("discovery:...").
const (
	DiscoveryAgent = "discovery"
	GenerateAgent  = "generate_sql"
	FixAgent       = "fix_sql"
	ExecuteAgent   = "execute_sql"
)

// Unavailable starts the discovery agent's answer when the database holds
// no data for the task.
const Unavailable = "DATA UNAVAILABLE:"

// The router's error patterns: a call result matching one ends the turn
// with an error answer (router.Outcome.Pattern names the one matched).
const (
	// RefusedPattern matches the read-only layer's refusal of a statement
	// that could write (sqlread.RefusedError).
	RefusedPattern = `query refused: [^\n]*read-only`
	// UnavailablePattern matches an answer saying the data is not there.
	UnavailablePattern = `(?m)^\s*DATA UNAVAILABLE:`
)

// Deadline bounds each run of the router.
const Deadline = 5 * time.Minute

// agentSteps is each sub-agent's step limit (a nested run does not
// inherit the router's).
const agentSteps = 24

const routerPrompt = `You answer questions about a lending library's SQLite database by delegating to specialist agents and tools. ` +
	`The agents do not see this conversation: give each one a complete task.

Work in this order:
1. Call discovery to find the tables and columns the question needs.
2. Call generate_sql with the question and the discovery output, passed as {{call:ID}} with the discovery call's ID.
3. Call validate_sql with {"sql": "{{call:ID}}"}, the ID being the generate_sql call's.
4. If the result starts with "invalid:", call fix_sql with the query, the error and the discovery output, all as references. It checks its repair itself.
5. Call execute_sql with the valid query as a reference, and the question. Its answer is the final answer.

The database is read-only: nothing can change its data. Ask the person (ask_human) only when the question cannot be understood without them.`

const discoveryPrompt = `You find where data lives in a lending library's SQLite database, with list_tables, describe_table and sample_rows. ` +
	`Answer with what the task needs: the relevant tables, their relevant columns with types, how the tables join, and the formats of values you saw in sample rows (dates, codes). ` +
	`If the database holds no data for the task, answer with one line starting with "` + Unavailable + `" followed by what is missing.`

const generatePrompt = `You write one SQLite SELECT statement that answers a question, from the schema you are given; describe_table shows a table you need to check, and validate_sql checks a query. ` +
	`Reply with only the SQL: no prose and no code fence. The database is read-only: never write a statement that changes data.`

const fixPrompt = `You repair SQLite queries. You get a query, the error SQLite gave for it and usually the schema. ` +
	`Find the cause (a wrong table or column name, a bad join, a syntax error), check the columns with describe_table, and confirm the repaired query with validate_sql. ` +
	`Reply with only the corrected SQL: no prose and no code fence.`

const executePrompt = `You run one read-only SQLite query with query_sql and answer a question from its rows. ` +
	`Run the query you are given as it is. Then answer in a few lines: the figures the rows show (never figures they do not show) and one sentence of analysis. ` +
	`If the query fails, say so and quote the error.`

// NewGraph builds the router over model and db: the four sub-agents, the
// router's own validate_sql, the error patterns and the deadline. db is
// read through the read-only layer only (give it sqlread.OpenReadOnly's
// database); ask_human needs a checkpointer and a thread on the run.
// agentModels, when it names a sub-agent, gives that agent its own model
// (a cheaper one for discovery, say); the others use model.
func NewGraph(model llm.Model, db sqlread.Database, agentModels map[string]llm.Model) (*graph.Graph, error) {
	var errs []error
	if model == nil {
		errs = append(errs, errors.New("sqlrouter: the model is nil; pass the llm.Model that plays the router and its agents (Script() for the scripted one)"))
	}
	if db == nil {
		errs = append(errs, errors.New("sqlrouter: the database is nil; open one with sqlread.OpenReadOnly (CreateSampleDB makes the sample)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	specs := []struct {
		name, description, system string
		tools                     []tool.Tool
	}{
		{DiscoveryAgent, "Finds the tables and columns of the database that a question needs, with their types, joins and value formats. Task: the question.",
			discoveryPrompt, []tool.Tool{ListTablesTool(db), DescribeTableTool(db), SampleRowsTool(db)}},
		{GenerateAgent, "Writes one SQLite SELECT for a question. Task: the question and the relevant schema. Answers with only the SQL.",
			generatePrompt, []tool.Tool{DescribeTableTool(db), ValidateSQLTool(db)}},
		{FixAgent, "Repairs a SQLite query that failed. Task: the query, SQLite's error and the relevant schema. Answers with only the corrected SQL.",
			fixPrompt, []tool.Tool{DescribeTableTool(db), ValidateSQLTool(db)}},
		{ExecuteAgent, "Runs one read-only SQLite query and answers the question from its rows. Task: the question and the query. Its answer is the final answer.",
			executePrompt, []tool.Tool{sqlread.SQLTool(db, MaxResultRows)}},
	}
	for name := range agentModels {
		switch name {
		case DiscoveryAgent, GenerateAgent, FixAgent, ExecuteAgent:
		default:
			return nil, fmt.Errorf("sqlrouter: Config.AgentModels names %q, which is no agent; the agents are %s, %s, %s and %s", name, DiscoveryAgent, GenerateAgent, FixAgent, ExecuteAgent)
		}
	}
	agents := make([]router.Agent, 0, len(specs))
	for _, s := range specs {
		m := model
		if am := agentModels[s.name]; am != nil {
			m = am
		}
		g, err := react.New(react.Config{Name: "sqlrouter." + s.name, Model: m, System: s.system, Tools: s.tools, MaxSteps: agentSteps})
		if err != nil {
			return nil, fmt.Errorf("sqlrouter: the %s agent: %w", s.name, err)
		}
		agents = append(agents, router.Agent{Name: s.name, Description: s.description, Graph: g})
	}
	g, err := router.New(router.Config{
		Name:          "sqlrouter",
		Model:         model,
		System:        routerPrompt,
		Agents:        agents,
		Tools:         []tool.Tool{ValidateSQLTool(db)},
		Terminal:      []string{ExecuteAgent},
		ErrorPatterns: []string{RefusedPattern, UnavailablePattern},
		AskHuman:      true,
		Deadline:      Deadline,
	})
	if err != nil {
		return nil, fmt.Errorf("sqlrouter: %w", err)
	}
	return g, nil
}
