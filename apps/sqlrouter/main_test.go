package sqlrouter

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// Every test must stop what it starts: nested runs, tool tasks, database
// connections.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recordingDB is a Database that remembers every statement it was asked
// to run, so a test can tell what reached the read-only layer.
type recordingDB struct {
	sqlread.Database
	mu      sync.Mutex
	queries []string
}

func (r *recordingDB) Query(ctx context.Context, q string, maxRows int) (*sqlread.Rows, error) {
	r.mu.Lock()
	r.queries = append(r.queries, q)
	r.mu.Unlock()
	return r.Database.Query(ctx, q, maxRows)
}

// ran counts the statements equal to q (after trimming).
func (r *recordingDB) ran(q string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, got := range r.queries {
		if strings.TrimSpace(got) == strings.TrimSpace(q) {
			n++
		}
	}
	return n
}

func (r *recordingDB) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.queries...)
}

// sample creates the sample database in a temporary directory and opens
// it read-only; the test closes it.
func sample(t *testing.T) (*sqlread.SQLiteDB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), SampleFile)
	if created, err := CreateSampleDB(t.Context(), path); err != nil || !created {
		t.Fatalf("CreateSampleDB = %v, %v", created, err)
	}
	db, err := sqlread.OpenReadOnly(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// fingerprint summarises every table, so a test can tell whether anything
// changed.
func fingerprint(t *testing.T, db sqlread.Database) string {
	t.Helper()
	var parts []string
	for _, q := range []string{
		"SELECT count(*), group_concat(name || city) FROM branches",
		"SELECT count(*), group_concat(name || country) FROM authors",
		"SELECT count(*), group_concat(title || genre || published) FROM books",
		"SELECT count(*), group_concat(name || branch_id || joined_on) FROM members",
		"SELECT count(*), group_concat(book_id || member_id || loaned_on || coalesce(returned_on, '-')) FROM loans",
		"SELECT count(*) FROM sqlite_schema",
	} {
		rows, err := db.Query(t.Context(), q, 1)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, rows.Render())
	}
	return strings.Join(parts, "\n")
}

// run builds the router over m and db and runs one turn on a fresh
// thread.
func run(t *testing.T, m llm.Model, db sqlread.Database, input string) graph.State {
	t.Helper()
	g, err := NewGraph(m, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(t.Context(), react.Input(input),
		graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	if err != nil {
		t.Fatal(err)
	}
	return res.State
}

// requestsIn returns the requests made inside the namespace of an agent.
func requestsIn(m *llmtest.Model, agent string) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range m.Requests() {
		if strings.HasPrefix(r.Namespace, agent+":") {
			out = append(out, r)
		}
	}
	return out
}

// toolResults returns the texts of the tool results in a request.
func toolResults(r llmtest.Request) []string {
	var out []string
	for _, msg := range r.Messages {
		if msg.Role == llm.RoleTool {
			out = append(out, msg.Text())
		}
	}
	return out
}
