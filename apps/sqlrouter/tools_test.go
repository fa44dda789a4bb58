package sqlrouter

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/tool"
)

// callTool calls t with args (a JSON object) and returns its result or
// error.
func callTool(t *testing.T, tl tool.Tool, args string) (string, error) {
	t.Helper()
	return tl.Call(t.Context(), json.RawMessage(args))
}

func TestReadTools(t *testing.T) {
	db, _ := sample(t)
	before := fingerprint(t, db)
	for _, tl := range []tool.Tool{ListTablesTool(db), DescribeTableTool(db), SampleRowsTool(db), ValidateSQLTool(db)} {
		if !tl.Info().ReadOnly {
			t.Errorf("%s is not marked read-only", tl.Info().Name)
		}
	}

	out, err := callTool(t, DescribeTableTool(db), `{"table":"BOOKS"}`)
	if err != nil || !strings.HasPrefix(out, "CREATE TABLE books") || !strings.Contains(out, "genre     TEXT NOT NULL") || !strings.HasSuffix(out, "-- 12 rows") {
		t.Errorf("describe_table books: %v\n%s", err, out)
	}
	_, err = callTool(t, DescribeTableTool(db), `{"table":"fines"}`)
	if !tool.IsArgumentError(err) || !strings.Contains(err.Error(), `no table "fines"; the tables are authors, books, branches, loans, members`) {
		t.Errorf("describe_table fines: %v", err)
	}

	out, err = callTool(t, SampleRowsTool(db), `{"table":"branches"}`)
	if want := "id | name | city\n1 | Riverside | Alderford\n2 | Old Market | Alderford\n3 | Hillcrest | Brennock\n(3 rows)"; err != nil || out != want {
		t.Errorf("sample_rows branches: %v\n%s\nwant\n%s", err, out, want)
	}
	out, err = callTool(t, SampleRowsTool(db), `{"table":"loans","limit":2}`)
	if err != nil || !strings.HasSuffix(out, "\n(2 rows)") || !strings.Contains(out, "1 | 1 | 1 | 1 | 2024-10-03 | 2024-10-20") {
		t.Errorf("sample_rows loans, 2: %v\n%s", err, out)
	}
	for _, bad := range []string{`{"table":"loans","limit":21}`, `{"table":"loans","limit":-1}`} {
		if _, err := callTool(t, SampleRowsTool(db), bad); !tool.IsArgumentError(err) || !strings.Contains(err.Error(), "ask for 1 to 20 rows") {
			t.Errorf("sample_rows %s: %v", bad, err)
		}
	}
	if after := fingerprint(t, db); after != before {
		t.Fatal("the database changed")
	}
}

func TestValidateSQL(t *testing.T) {
	db, _ := sample(t)
	v := ValidateSQLTool(db)
	out, err := callTool(t, v, `{"sql":"`+"```sql\\nSELECT title FROM books WHERE genre = 'science'\\n```"+`"}`)
	if err != nil || !strings.HasPrefix(out, Valid) || !strings.Contains(out, "SCAN books") {
		t.Errorf("a valid query in a fence: %v\n%s", err, out)
	}
	args, _ := json.Marshal(map[string]string{"sql": badSQL})
	out, err = callTool(t, v, string(args))
	if err != nil || out != Invalid+" SQLite cannot compile the query: SQL logic error: no such column: b.category (1)" {
		t.Errorf("a wrong column: %v\n%s", err, out)
	}
	out, err = callTool(t, v, `{"sql":"SELECT title FROM books WHERE genre = = 1"}`)
	if err != nil || !strings.HasPrefix(out, Invalid) || !strings.Contains(out, "syntax error") {
		t.Errorf("a syntax error: %v\n%s", err, out)
	}
	out, err = callTool(t, v, `{"sql":"SELEC 1"}`)
	if err == nil || !errors.Is(err, sqlread.ErrNotReadOnly) {
		t.Errorf("a misspelt keyword: %v, %q; want a refusal (SELEC is no read statement)", err, out)
	}
	for _, q := range []string{
		"UPDATE loans SET returned_on = NULL",
		"DELETE FROM loans",
		"SELECT 1; DROP TABLE books",
	} {
		args, _ := json.Marshal(map[string]string{"sql": q})
		_, err := callTool(t, v, string(args))
		if !tool.IsArgumentError(err) || !errors.Is(err, sqlread.ErrNotReadOnly) || !strings.Contains(err.Error(), "query refused:") {
			t.Errorf("%s: %v; want the read-only layer's refusal", q, err)
		}
	}
	if _, err := callTool(t, v, `{"sql":"EXPLAIN SELECT 1"}`); !tool.IsArgumentError(err) || !strings.Contains(err.Error(), "without EXPLAIN") {
		t.Errorf("an EXPLAIN: %v", err)
	}
}

func TestExtractSQL(t *testing.T) {
	for in, want := range map[string]string{
		"  SELECT 1  ":                      "SELECT 1",
		"```sql\nSELECT 1\n```":             "SELECT 1",
		"```SQLite\nSELECT 1\n```":          "SELECT 1",
		"Here it is:\n```\nSELECT 1\n```\n": "SELECT 1",
		"```SELECT 1```":                    "SELECT 1",
		"```SELECT\n*\nFROM t\n```":         "SELECT\n*\nFROM t",
		"```sql\nSELECT 1":                  "SELECT 1",
	} {
		if got := ExtractSQL(in); got != want {
			t.Errorf("ExtractSQL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCreateSampleDBLeavesAFileAlone(t *testing.T) {
	_, path := sample(t)
	if created, err := CreateSampleDB(t.Context(), path); err != nil || created {
		t.Errorf("a second CreateSampleDB = %v, %v; want the file left alone", created, err)
	}
	blocker := filepath.Join(t.TempDir(), "file")
	if _, err := CreateSampleDB(t.Context(), blocker); err != nil {
		t.Fatal(err)
	}
	// A path under a file cannot be created; the error names it.
	if _, err := CreateSampleDB(t.Context(), filepath.Join(blocker, "x.db")); err == nil || !strings.Contains(err.Error(), "sqlrouter: sample database") {
		t.Errorf("a path under a file: %v", err)
	}
}

// Several creators at once (two builds of the app, as when the web page
// asks for an assistant's graph and schemas together) all succeed, one at
// least says it created the file, no temporary file is left, and the file
// is whole.
func TestCreateSampleDBConcurrently(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "library.db")
	const n = 6
	type result struct {
		created bool
		err     error
	}
	results := make(chan result, n)
	for range n {
		go func() {
			created, err := CreateSampleDB(t.Context(), path)
			results <- result{created, err}
		}()
	}
	made := 0
	for range n {
		r := <-results
		if r.err != nil {
			t.Errorf("a concurrent CreateSampleDB failed: %v", r.err)
		}
		if r.created {
			made++
		}
	}
	if made == 0 {
		t.Error("no creator says it created the file")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.part")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	db, err := sqlread.OpenReadOnly(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables, err := db.Tables(t.Context())
	if err != nil || len(tables) != 5 {
		t.Errorf("the sample has tables %v (%v), want 5", tables, err)
	}
}
