package sqlcore

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// full is a query file naming every statement of Queries.
func full(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, name := range (&Queries{}).Names() {
		b.WriteString("-- name: " + name + "\nSELECT '" + name + "'\n-- a comment kept in the statement\n\n")
	}
	return b.String()
}

func TestLoad(t *testing.T) {
	files := fstest.MapFS{
		"q/a.sql":   {Data: []byte("-- a header, not a statement\n" + full(t))},
		"q/b.txt":   {Data: []byte("-- name: Nope\nSELECT 1\n")},
		"other.sql": {Data: []byte("-- name: Nope\nSELECT 1\n")},
	}
	q, err := Load(files, "q/*.sql")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := q.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	want := "SELECT 'GetDataset'\n-- a comment kept in the statement"
	if q.GetDataset != want {
		t.Errorf("GetDataset = %q, want %q", q.GetDataset, want)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown", "-- name: GetDataset\nSELECT 1\n-- name: NoSuchQuery\nSELECT 2\n", `query file q.sql:3: "NoSuchQuery" is not a statement`},
		{"unexported", "-- name: d\nSELECT 1\n", `"d" is not a statement`},
		{"twice", "-- name: GetDataset\nSELECT 1\n-- name: GetDataset\nSELECT 2\n", "GetDataset is given again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(fstest.MapFS{"q.sql": {Data: []byte(tc.text)}}, "*.sql")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := Load(fstest.MapFS{}, "*.sql"); err == nil {
		t.Error("Load of no files succeeded")
	}
	q, err := Load(fstest.MapFS{"q.sql": {Data: []byte("-- name: GetDataset\nSELECT 1\n")}}, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Check(); err == nil || !strings.Contains(err.Error(), "GetDatasetForUpdate is missing") {
		t.Errorf("Check = %v, want GetDatasetForUpdate missing", err)
	}
	if _, err := New(fakeDriver{}, q); err == nil {
		t.Error("New accepted incomplete queries")
	}
}

// fakeDialect is a dialect with $n parameters that can say containment
// in SQL (sql) or not.
type fakeDialect struct{ sql bool }

func (fakeDialect) Name() string                { return "fake" }
func (fakeDialect) Time(t time.Time) any        { return t }
func (fakeDialect) ScanTime(t *time.Time) any   { return t }
func (fakeDialect) List(s []string) any         { return s }
func (fakeDialect) IsUnique(error) bool         { return false }
func (fakeDialect) IsNoRows(error) bool         { return false }
func (fakeDialect) Param(n int) string          { return "$" + strconv.Itoa(n) }
func (fakeDialect) InList(col, p string) string { return col + " = ANY(" + p + ")" }
func (fakeDialect) MergesInSQL() bool           { return false }
func (fakeDialect) TagsInAccept() bool          { return false }
func (fakeDialect) Classify(err error) error    { return err }
func (f fakeDialect) NameContains(c, p string) string {
	if f.sql {
		return "name_has(" + c + ", " + p + ")"
	}
	return ""
}
func (f fakeDialect) JSONContains(c, p string) string {
	if f.sql {
		return c + " @> " + p
	}
	return ""
}
func (f fakeDialect) JSONTextContains(c, k, p string) string { return "" }
func (fakeDialect) MemberArg(k string) any                   { return k }
func (fakeDialect) MemberText(c, p string) string            { return c + "->>" + p }
func (fakeDialect) MemberMissing(c, p string) string         { return c + "->" + p + " IS NULL" }
func (fakeDialect) ExportDest(db.Column) any                 { return new(any) }
func (fakeDialect) ExportValue(_ db.Column, d any) (any, error) {
	return *d.(*any), nil
}
func (fakeDialect) ColumnArg(_ db.Column, v any) any        { return v }
func (f fakeDialect) ColumnParam(_ db.Column, n int) string { return f.Param(n) }
func (fakeDialect) ImportClause(string) string              { return "" }

// fakeDriver runs everything on a fakeConn.
type fakeDriver struct {
	fakeDialect
	c *fakeConn
}

func (d fakeDriver) Read(_ context.Context, fn func(Conn) error) error  { return fn(d.c) }
func (d fakeDriver) Write(_ context.Context, fn func(Conn) error) error { return fn(d.c) }
func (d fakeDriver) Reader() Conn                                       { return d.c }
func (d fakeDriver) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return d.c.Exec(ctx, q, args...)
}
func (d fakeDriver) WriteOne(_ context.Context, fn func(Conn) error) error { return fn(d.c) }
func (d fakeDriver) Wrap(tx any) (Conn, error)                             { return d.c, nil }
func (d fakeDriver) Unwrap(Conn) any                                       { return nil }
func (d fakeDriver) AppendEventRows(context.Context, Conn, string, string, []db.Event) error {
	return nil
}

// fakeConn answers every query with its rows (name, metadata JSON) and
// records the last statement.
type fakeConn struct {
	rows  [][2]string
	query string
	args  []any
}

func (c *fakeConn) Exec(context.Context, string, ...any) (int64, error) {
	return 0, errors.New("no exec")
}
func (c *fakeConn) QueryRow(context.Context, string, ...any) Row { return nil }
func (c *fakeConn) Query(_ context.Context, query string, args ...any) (Rows, error) {
	c.query, c.args = query, args
	return &fakeRows{rows: c.rows, i: -1}, nil
}

type fakeRows struct {
	rows [][2]string
	i    int
}

func (r *fakeRows) Next() bool { r.i++; return r.i < len(r.rows) }
func (r *fakeRows) Err() error { return nil }
func (r *fakeRows) Close()     {}
func (r *fakeRows) Scan(dest ...any) error {
	*dest[0].(*string), *dest[1].(*[]byte) = r.rows[r.i][0], []byte(r.rows[r.i][1])
	return nil
}

func scanNamed(r Row) (string, []byte, error) {
	var name string
	var md []byte
	err := r.Scan(&name, &md)
	return name, md, err
}

func namedFilter(t *testing.T, d Dialect, name string, md db.Metadata) *filter[string] {
	t.Helper()
	mf, err := dbutil.MetadataFilter(md)
	if err != nil {
		t.Fatal(err)
	}
	f := newFilter[string](d)
	f.where("tenant = %s", "t1")
	f.nameContains("name", name, func(v string) string { return v })
	f.contains("metadata", mf, func(_ string, md []byte) []byte { return md })
	return f
}

// TestSearchInGo: conditions the dialect cannot say are matched in Go and
// the page is taken after the match.
func TestSearchInGo(t *testing.T) {
	c := &fakeConn{rows: [][2]string{
		{"Alpha", `{"k":1}`}, {"beta", `{"k":2}`}, {"ALPHABET", `{"k":1,"x":[1,2]}`},
		{"alps", `{"k":1}`}, {"Alphonse", `{"k":1}`}, {"alpha2", `{"k":1}`},
	}}
	f := namedFilter(t, fakeDialect{}, "ALP", db.Metadata{"k": 1})
	got, err := search(context.Background(), c, f, "SELECT name, md FROM x", "name", 2, 1, scanNamed)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ALPHABET", "alps"}; !reflect.DeepEqual(got, want) {
		t.Errorf("search = %q, want %q", got, want)
	}
	if want := "SELECT name, md FROM x WHERE tenant = $1 ORDER BY name"; c.query != want {
		t.Errorf("query = %q, want %q", c.query, want)
	}
	n, err := count(context.Background(), c, f, "SELECT name, md FROM x", "SELECT count(*) FROM x", scanNamed)
	if err != nil || n != 5 {
		t.Errorf("count = %d, %v; want 5", n, err)
	}
}

// TestSearchInSQL: when every condition is in SQL, paging is too, and
// the arguments follow the parameters.
func TestSearchInSQL(t *testing.T) {
	c := &fakeConn{rows: [][2]string{{"a", `{}`}, {"b", `{}`}}}
	f := namedFilter(t, fakeDialect{sql: true}, "x", db.Metadata{"k": 1})
	got, err := search(context.Background(), c, f, "SELECT name, md FROM x", "name DESC", 10, 5, scanNamed)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("search = %q, want %q (no Go filter)", got, want)
	}
	wantQ := "SELECT name, md FROM x WHERE tenant = $1 AND name_has(name, $2) AND metadata @> $3 ORDER BY name DESC LIMIT $4 OFFSET $5"
	if c.query != wantQ {
		t.Errorf("query = %q\nwant    %q", c.query, wantQ)
	}
	wantArgs := []any{"t1", "x", []byte(`{"k":1}`), 10, 5}
	if !reflect.DeepEqual(c.args, wantArgs) {
		t.Errorf("args = %q, want %q", c.args, wantArgs)
	}
	if len(f.args) != 3 {
		t.Errorf("search changed the filter's arguments: %q", f.args)
	}
}

// An optional statement (`sql:"optional"`) may be left out of a dialect's
// files: Check accepts that and All skips it; given, it loads like any
// other. A required one of the run group is still required.
func TestOptionalStatements(t *testing.T) {
	var b strings.Builder
	for _, name := range (&Queries{}).Names() {
		if name == "LockRunSlots" || name == "ImportedRuns" {
			continue
		}
		b.WriteString("-- name: " + name + "\nSELECT 1\n")
	}
	q, err := Load(fstest.MapFS{"q.sql": {Data: []byte(b.String())}}, "*.sql")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := q.Check(); err != nil {
		t.Fatalf("Check without the optional statements: %v", err)
	}
	for name := range q.All() {
		if name == "LockRunSlots" || name == "ImportedRuns" {
			t.Errorf("All yields the missing optional statement %s", name)
		}
	}
	q, err = Load(fstest.MapFS{"q.sql": {Data: []byte(b.String() + "-- name: LockRunSlots\nSELECT 2\n")}}, "*.sql")
	if err != nil {
		t.Fatalf("Load with LockRunSlots: %v", err)
	}
	if q.LockRunSlots != "SELECT 2" {
		t.Errorf("LockRunSlots = %q, want the file's text", q.LockRunSlots)
	}
	q.EndRun = ""
	if err := q.Check(); err == nil || !strings.Contains(err.Error(), "EndRun") {
		t.Errorf("Check without EndRun = %v, want an error naming it", err)
	}
}
