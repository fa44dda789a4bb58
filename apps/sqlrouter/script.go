package sqlrouter

import (
	"context"
	"encoding/json"
	"iter"
	"regexp"
	"strings"

	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// The IDs of the router's calls in the scripted scenario (the references
// between them need fixed IDs).
const (
	discoverCall = "call_discover"
	generateCall = "call_generate"
	validateCall = "call_validate"
	fixCall      = "call_fix"
	executeCall  = "call_execute"
)

// badSQL is the scripted generate_sql's first query: books has no
// category column, so SQLite rejects it.
const badSQL = `SELECT b.category AS genre, COUNT(*) AS loans
FROM loans AS l JOIN books AS b ON b.id = l.book_id
WHERE l.loaned_on >= '2025-01-01' AND l.loaned_on < '2026-01-01'
GROUP BY b.category
ORDER BY loans DESC`

// fixedSQL is fix_sql's repair of badSQL.
const fixedSQL = `SELECT b.genre AS genre, COUNT(*) AS loans
FROM loans AS l JOIN books AS b ON b.id = l.book_id
WHERE l.loaned_on >= '2025-01-01' AND l.loaned_on < '2026-01-01'
GROUP BY b.genre
ORDER BY loans DESC`

const discoveryAnswer = `The question needs two tables:
- loans (id INTEGER, book_id INTEGER, member_id INTEGER, branch_id INTEGER, loaned_on TEXT, returned_on TEXT): one row per loan; loaned_on is an ISO date such as 2025-01-06.
- books (id INTEGER, title TEXT, author_id INTEGER, genre TEXT, published INTEGER): genre is one of fiction, mystery, science, history, children.
Join loans.book_id = books.id, and filter the year on loans.loaned_on.`

// scriptedAnswer is the execute agent's summary of fixedSQL's rows (the
// tests check every figure against the database).
const scriptedAnswer = `Loans per genre in 2025:
- fiction: 8 loans
- mystery: 7 loans
- science: 4 loans
- history: 3 loans
- children: 2 loans
Fiction was borrowed most, just ahead of mystery; together they account for 15 of the year's 24 loans.`

// call is a scripted tool call with a fixed ID and arguments encoded from
// args.
func call(id, name string, args any) llm.ToolCall {
	raw, _ := json.Marshal(args) // the scripts pass maps of strings, which always encode
	c := llmtest.Call(name, string(raw))
	c.ID = id
	return c
}

type obj = map[string]any

// Script returns the scripted model of the example's scenario. The router
// model asks discovery for the schema, hands its output to generate_sql
// by reference, and validates the query it gets: SQLite rejects it (books
// has no category column). fix_sql gets the query, the error and the
// schema by reference, checks books and validates its repair; execute_sql
// runs the repaired query and summarises the rows, which ends the turn.
//
// Each reply is chosen by what the request holds — the sub-agent's
// namespace or the router's node, and how many tool results the turn has
// so far — never by how many requests came before, so any number of
// threads get the same replies.
func Script() llm.Model {
	m := llmtest.New()
	at := func(ns string, n int, t llmtest.Turn) {
		m.When(llmtest.And(llmtest.Namespace(ns+":"), turnResults(n)), t).Repeat()
	}
	at(DiscoveryAgent, 0, llmtest.ToolCalls(llmtest.Call(ListTablesName, `{}`)))
	at(DiscoveryAgent, 1, llmtest.ToolCalls(
		llmtest.Call(DescribeTableName, `{"table":"loans"}`),
		llmtest.Call(DescribeTableName, `{"table":"books"}`)))
	at(DiscoveryAgent, 3, llmtest.ToolCalls(llmtest.Call(SampleRowsName, `{"table":"loans","limit":3}`)))
	at(DiscoveryAgent, 4, llmtest.Text(discoveryAnswer))
	m.When(llmtest.Namespace(GenerateAgent+":"), llmtest.Text(badSQL)).Repeat()
	at(FixAgent, 0, llmtest.ToolCalls(llmtest.Call(DescribeTableName, `{"table":"books"}`)))
	at(FixAgent, 1, llmtest.ToolCalls(call("", ValidateSQLName, obj{"sql": fixedSQL})))
	at(FixAgent, 2, llmtest.Text(fixedSQL))
	at(ExecuteAgent, 0, llmtest.ToolCalls(call("", sqlread.SQLToolName, obj{"sql": fixedSQL})))
	at(ExecuteAgent, 1, llmtest.Text(scriptedAnswer))
	return &scripted{rules: m}
}

// scripted plays the router from its conversation: the n-th call of the
// turn refers to the earlier calls by the IDs they actually got (a model
// serving many threads gets fresh call IDs), and the sub-agents from the
// rules.
type scripted struct{ rules *llmtest.Model }

func (s *scripted) Name() string { return s.rules.Name() }

func (s *scripted) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if t, ok := routerTurn(ctx, req); ok {
		return llmtest.New(llmtest.WithName(s.Name())).Reply(t).Generate(ctx, req)
	}
	return s.rules.Generate(ctx, req)
}

func (s *scripted) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	if t, ok := routerTurn(ctx, req); ok {
		return llmtest.New(llmtest.WithName(s.Name())).Reply(t).Stream(ctx, req)
	}
	return s.rules.Stream(ctx, req)
}

// routerTurn is the router's next call in the scripted turn.
func routerTurn(ctx context.Context, req *llm.Request) (llmtest.Turn, bool) {
	if graph.NodeName(ctx) != router.RouterNode || graph.Namespace(ctx) != "" {
		return llmtest.Turn{}, false
	}
	// The calls of the latest turn, by tool, with their IDs.
	ids := map[string]string{}
	results := 0
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			ids, results = map[string]string{}, 0
		case llm.RoleTool:
			results++
		}
		for _, c := range m.ToolCalls {
			ids[c.Name] = c.ID
		}
	}
	ref := func(tool string) string { return router.Ref(ids[tool]) }
	switch results {
	case 0:
		if q := lastUserText(req.Messages); !inScope(q) {
			return llmtest.Text(Scope), true
		}
		return llmtest.ToolCalls(call(discoverCall, DiscoveryAgent, obj{
			"task": "Find the tables and columns that answer this question: " + Question})), true
	case 1:
		return llmtest.ToolCalls(call(generateCall, GenerateAgent, obj{
			"task": "Write one SQLite query for this question: " + Question + "\n\nThe relevant schema:\n" + ref(DiscoveryAgent)})), true
	case 2:
		return llmtest.ToolCalls(call(validateCall, ValidateSQLName, obj{"sql": ref(GenerateAgent)})), true
	case 3:
		return llmtest.ToolCalls(call(fixCall, FixAgent, obj{
			"task": "This query failed validation.\n\nQuery:\n" + ref(GenerateAgent) +
				"\n\nError:\n" + ref(ValidateSQLName) + "\n\nSchema:\n" + ref(DiscoveryAgent)})), true
	case 4:
		return llmtest.ToolCalls(call(executeCall, ExecuteAgent, obj{
			"task": "Run this query and answer the question \"" + Question + "\" from its rows.\n\n" + ref(FixAgent)})), true
	}
	return llmtest.Turn{}, false
}

// Scope is the scripted router's answer to a question outside its
// scenario: what it can demonstrate, and the question to ask.
const Scope = "I am the SQL router's scripted demo model, so I can answer only one question about the sample library: " +
	"which book genres were borrowed most in 2025 (discovery finds the tables, a first query fails validation, " +
	"it is fixed and run). I cannot answer other questions; a real model can (--model, or OPENAI_API_KEY). " +
	"Try: \"" + Question + "\""

var (
	aboutLoans = regexp.MustCompile(`(?i)\b(loan|loans|borrow\w*|lent|lending)\b`)
	aboutGenre = regexp.MustCompile(`(?i)\bgenres?\b`)
	otherYear  = regexp.MustCompile(`\b(19|20)\d\d\b`)
)

// inScope reports whether a question is the scenario's: loans per genre,
// in 2025 (or no year said). An empty question is the sample one.
func inScope(q string) bool {
	if strings.TrimSpace(q) == "" {
		return true
	}
	for _, y := range otherYear.FindAllString(q, -1) {
		if y != "2025" {
			return false
		}
	}
	return aboutLoans.MatchString(q) && aboutGenre.MatchString(q)
}

func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

// turnResults matches a request whose latest turn (the messages after the
// last user message) holds n tool results.
func turnResults(n int) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		c := 0
		for _, m := range r.Messages {
			switch m.Role {
			case llm.RoleUser:
				c = 0
			case llm.RoleTool:
				c++
			}
		}
		return c == n
	}
}
