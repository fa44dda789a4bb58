package sqlrouter

import (
	"encoding/json"

	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps/sqlread"
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
// Each sub-agent's replies are chosen by its namespace and the router's by
// its node, so the order in which requests arrive does not matter.
func Script() llm.Model {
	m := llmtest.New()
	m.When(llmtest.Namespace(DiscoveryAgent+":"),
		llmtest.ToolCalls(llmtest.Call(ListTablesName, `{}`)),
		llmtest.ToolCalls(
			llmtest.Call(DescribeTableName, `{"table":"loans"}`),
			llmtest.Call(DescribeTableName, `{"table":"books"}`)),
		llmtest.ToolCalls(llmtest.Call(SampleRowsName, `{"table":"loans","limit":3}`)),
		llmtest.Text(discoveryAnswer),
	)
	m.When(llmtest.Namespace(GenerateAgent+":"), llmtest.Text(badSQL))
	m.When(llmtest.Namespace(FixAgent+":"),
		llmtest.ToolCalls(llmtest.Call(DescribeTableName, `{"table":"books"}`)),
		llmtest.ToolCalls(call("", ValidateSQLName, obj{"sql": fixedSQL})),
		llmtest.Text(fixedSQL),
	)
	m.When(llmtest.Namespace(ExecuteAgent+":"),
		llmtest.ToolCalls(call("", sqlread.SQLToolName, obj{"sql": fixedSQL})),
		llmtest.Text(scriptedAnswer),
	)
	m.When(llmtest.Node(router.RouterNode),
		llmtest.ToolCalls(call(discoverCall, DiscoveryAgent, obj{
			"task": "Find the tables and columns that answer this question: " + Question})),
		llmtest.ToolCalls(call(generateCall, GenerateAgent, obj{
			"task": "Write one SQLite query for this question: " + Question + "\n\nThe relevant schema:\n" + router.Ref(discoverCall)})),
		llmtest.ToolCalls(call(validateCall, ValidateSQLName, obj{"sql": router.Ref(generateCall)})),
		llmtest.ToolCalls(call(fixCall, FixAgent, obj{
			"task": "This query failed validation.\n\nQuery:\n" + router.Ref(generateCall) +
				"\n\nError:\n" + router.Ref(validateCall) + "\n\nSchema:\n" + router.Ref(discoverCall)})),
		llmtest.ToolCalls(call(executeCall, ExecuteAgent, obj{
			"task": "Run this query and answer the question \"" + Question + "\" from its rows.\n\n" + router.Ref(fixCall)})),
	)
	return m
}
