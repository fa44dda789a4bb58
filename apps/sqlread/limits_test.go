package sqlread

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writable creates a SQLite file with setup run on it and returns its
// path.
func writable(t *testing.T, setup ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "limits.db")
	w, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, q := range setup {
		if _, err := w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q[:min(len(q), 80)], err)
		}
	}
	return path
}

func openPath(t *testing.T, path string) *SQLiteDB {
	t.Helper()
	db, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// allocated returns the bytes f allocated on the Go heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestAHugeValueIsCutWhileReading: a 50 MB text and a 50 MB blob are read
// only up to the value limit — the process never holds them whole — and
// the result says what was cut.
func TestAHugeValueIsCutWhileReading(t *testing.T) {
	const size = 50 << 20
	path := writable(t,
		"CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT, data BLOB)",
		fmt.Sprintf("INSERT INTO docs VALUES (1, printf('%%.*c', %d, 'x'), zeroblob(%d))", size, size),
		"INSERT INTO docs VALUES (2, 'short', x'00ff')",
	)
	db := openPath(t, path)
	var rows *Rows
	var err error
	n := allocated(func() { rows, err = db.Query(context.Background(), "SELECT id, body, data FROM docs ORDER BY id", 10) })
	if err != nil {
		t.Fatal(err)
	}
	if n > 8<<20 {
		t.Errorf("reading two rows allocated %d MB; the 50 MB values were read whole", n>>20)
	}
	if len(rows.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows.Rows))
	}
	body := *rows.Rows[0][1]
	if len(body) > DefaultMaxValueBytes+len("…") || !strings.HasPrefix(body, "xxxx") || !strings.HasSuffix(body, "…") {
		t.Errorf("the huge text came back as %d bytes (%q...)", len(body), body[:min(len(body), 20)])
	}
	if *rows.Rows[1][1] != "short" || *rows.Rows[1][2] != "x'00ff'" {
		t.Errorf("small values changed: %q, %q", *rows.Rows[1][1], *rows.Rows[1][2])
	}
	if rows.CutValues != 2 {
		t.Errorf("CutValues = %d, want 2 (the text and the blob)", rows.CutValues)
	}
	out := rows.Render()
	if !strings.Contains(out, fmt.Sprintf("2 values longer than %d bytes were cut", DefaultMaxValueBytes)) {
		t.Errorf("the rendered result does not say what was cut:\n%s", out[max(0, len(out)-300):])
	}
	// Through the tool, too: the model reads what was cut.
	res, err := SQLTool(db, 5).Call(context.Background(), []byte(`{"sql":"SELECT body FROM docs WHERE id = 1"}`))
	if err != nil || !strings.Contains(res, "1 values longer than") || len(res) > 2*DefaultMaxValueBytes {
		t.Errorf("tool result (%d bytes): %v\n%.200s", len(res), err, res)
	}
}

// TestAWideTableIsBounded: a 2,000-column table read with SELECT * gives
// the first Limits.MaxColumns columns, fewer rows than asked so that rows
// × columns stays under Limits.MaxCells, and says what was left out.
func TestAWideTableIsBounded(t *testing.T) {
	const width = 2000
	cols := make([]string, width)
	vals := make([]string, width)
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d INTEGER", i)
		vals[i] = fmt.Sprint(i)
	}
	setup := []string{"CREATE TABLE wide (" + strings.Join(cols, ", ") + ")"}
	for range 200 {
		setup = append(setup, "INSERT INTO wide VALUES ("+strings.Join(vals, ", ")+")")
	}
	db := openPath(t, writable(t, setup...))
	rows, err := db.Query(context.Background(), "SELECT * FROM wide", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Columns) != DefaultMaxColumns || rows.OmittedColumns != width-DefaultMaxColumns {
		t.Errorf("%d columns read, %d omitted; want %d and %d", len(rows.Columns), rows.OmittedColumns, DefaultMaxColumns, width-DefaultMaxColumns)
	}
	if cells := len(rows.Rows) * len(rows.Columns); cells > DefaultMaxCells || !rows.Truncated {
		t.Errorf("%d rows × %d columns = %d cells (limit %d), truncated = %v", len(rows.Rows), len(rows.Columns), cells, DefaultMaxCells, rows.Truncated)
	}
	if got := *rows.Rows[0][DefaultMaxColumns-1]; got != fmt.Sprint(DefaultMaxColumns-1) {
		t.Errorf("last column read = %q", got)
	}
	if out := rows.Render(); !strings.Contains(out, fmt.Sprintf("(%d more columns not shown", width-DefaultMaxColumns)) {
		t.Errorf("the rendered result does not say columns were left out:\n%.300s", out[len(out)-300:])
	}
	// The schema of the wide table is still read whole.
	tables, err := db.Tables(context.Background())
	if err != nil || len(tables) != 1 || !strings.Contains(tables[0].SQL, "c1999 INTEGER") {
		t.Errorf("Tables: %v, %d tables", err, len(tables))
	}
	// A statement that cannot be wrapped is bounded as it is scanned.
	db.Limits = Limits{MaxColumns: 3}
	rows, err = db.Query(context.Background(), "PRAGMA table_info(wide)", 5000)
	if err != nil || len(rows.Columns) != 3 || rows.OmittedColumns != 3 {
		t.Errorf("PRAGMA: %v, columns %v, omitted %d", err, rows.Columns, rows.OmittedColumns)
	}
}

// TestWrappingKeepsResults: wrapping the statement changes nothing a
// statement within the limits sees — duplicate column names, CTEs,
// trailing semicolons and comments, ORDER BY — and errors are SQLite's own
// for the statement.
func TestWrappingKeepsResults(t *testing.T) {
	db := openPath(t, writable(t, "CREATE TABLE a (id INTEGER, name TEXT)", "INSERT INTO a VALUES (2, 'b'), (1, 'a')"))
	rows, err := db.Query(context.Background(), "WITH x AS (SELECT * FROM a) SELECT x.id, y.id, x.name FROM x JOIN a y ON y.id = 3 - x.id ORDER BY x.id DESC; -- done", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := rows.Render(); !strings.HasPrefix(got, "id | id | name\n2 | 1 | b\n1 | 2 | a\n") {
		t.Errorf("rendered:\n%s", got)
	}
	if _, err := db.Query(context.Background(), "SELECT nosuch FROM a", 10); err == nil || !strings.Contains(err.Error(), "no such column: nosuch") {
		t.Errorf("bad column: %v", err)
	}
}
