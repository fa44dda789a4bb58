package sqlrouter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/tool"
)

// pgSample creates the sample library in a fresh schema (dropped at the
// end) and opens it read-only.
func pgSample(t *testing.T) (*sqlread.PostgresDB, string, string) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.Name(t, fmt.Sprint(time.Now().UnixNano()%1e9), pgdb.MaxIdentifierLen)
	t.Cleanup(func() {
		pool, err := pgdb.Connect(context.Background(), dsn, "")
		if err != nil {
			return
		}
		defer pool.Close()
		pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
	})
	if created, err := CreateSamplePostgres(t.Context(), dsn, schema); err != nil || !created {
		t.Fatalf("CreateSamplePostgres = %v, %v", created, err)
	}
	if created, err := CreateSamplePostgres(t.Context(), dsn, schema); err != nil || created {
		t.Fatalf("CreateSamplePostgres again = %v, %v; want no change", created, err)
	}
	db, err := sqlread.OpenPostgres(t.Context(), dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dsn, schema
}

// The scripted scenario on PostgreSQL: the same router, agents and tools;
// validate_sql gets PostgreSQL's own error for the bad query, and the
// answer's figures are PostgreSQL's.
func TestScriptedScenarioOnPostgres(t *testing.T) {
	db, _, _ := pgSample(t)
	s := run(t, Script(), db, Question)
	o, ok := router.Finished(s)
	if !ok || o.Failed() || o.Tool != ExecuteAgent {
		t.Fatalf("outcome %+v %v", o, ok)
	}
	rows, err := db.Query(t.Context(), fixedSQL, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows.Rows {
		if want := fmt.Sprintf("%s: %s loans", *r[0], *r[1]); !strings.Contains(o.Answer, want) {
			t.Errorf("the answer lacks %q", want)
		}
	}
	var validate string
	for _, l := range Chain(s) {
		if l.Tool == ValidateSQLName {
			validate = l.Result
		}
	}
	if !strings.HasPrefix(validate, Invalid+" PostgreSQL cannot compile the query") || !strings.Contains(validate, "b.category does not exist") {
		t.Errorf("validate_sql said %q; want PostgreSQL's own error", validate)
	}
}

// validate_sql on PostgreSQL: EXPLAIN in a rolled-back read-only
// transaction accepts a good query with its plan, reports the engine's
// error for a bad one, and refuses writes before the engine sees them.
func TestValidateOnPostgres(t *testing.T) {
	db, _, _ := pgSample(t)
	v := ValidateSQLTool(db)
	call := func(sql string) (string, error) {
		return v.Call(t.Context(), []byte(fmt.Sprintf(`{"sql": %q}`, sql)))
	}
	if out, err := call(fixedSQL); err != nil || !strings.HasPrefix(out, Valid+" PostgreSQL") || !strings.Contains(out, "Plan:\n- ") {
		t.Errorf("a good query: %q, %v", out, err)
	}
	if out, err := call("SELECT nope FROM books"); err != nil || !strings.Contains(out, `column "nope" does not exist`) {
		t.Errorf("an unknown column: %q, %v", out, err)
	}
	if out, err := call("SELECT * FROM books WHERE"); err != nil || !strings.Contains(out, "syntax error") {
		t.Errorf("a syntax error: %q, %v", out, err)
	}
	var argErr *tool.ArgumentError
	if _, err := call("DELETE FROM loans"); err == nil || !errors.As(err, &argErr) {
		t.Errorf("a write: %v; want an argument error", err)
	}
	if !strings.Contains(v.Info().Description, "PostgreSQL") {
		t.Errorf("the description does not name the engine: %s", v.Info().Description)
	}
}
