// Package sqlread is the read-only SQL layer the examples share: a
// Database that refuses, before the engine sees it, any statement that is
// not a single read (CheckReadOnly), over a SQLite file opened read-only
// (OpenReadOnly), and SQLTool, which gives one to an agent as a read tool.
// The example systems that let a model write SQL read their data only
// through it, so a model's UPDATE or DROP is an error it can read, never a
// change.
package sqlread

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/trellis-agents/trellis/tool"
)

// Database is a database read through this layer: the tables' definitions
// and the rows of read-only queries. SQLiteDB is the implementation for SQLite files;
// another engine needs its own.
type Database interface {
	// Tables returns the user tables with their definitions, by name.
	Tables(ctx context.Context) ([]Table, error)
	// Query runs one read-only statement and returns at most maxRows rows.
	// A statement that could change anything is refused with an error
	// wrapping ErrNotReadOnly, without reaching the database.
	Query(ctx context.Context, query string, maxRows int) (*Rows, error)
}

// Table is one table of a database.
type Table struct {
	Name string `json:"name"`
	// SQL is the table's definition (its CREATE TABLE statement).
	SQL string `json:"sql"`
}

// Rows is the result of a query, every value rendered as text, within the
// database's Limits: what was cut is counted, and Render says so.
type Rows struct {
	Columns []string `json:"columns"`
	// Rows holds the values; NULL is kept as a nil pointer.
	Rows [][]*string `json:"rows"`
	// Truncated says there were more rows than the limit (the caller's
	// maxRows, or Limits.MaxCells over the columns).
	Truncated bool `json:"truncated,omitempty"`
	// OmittedColumns counts the result's columns past Limits.MaxColumns,
	// which were not read.
	OmittedColumns int `json:"omitted_columns,omitempty"`
	// CutValues counts the values longer than Limits.MaxValueBytes, which
	// were read only up to it.
	CutValues int `json:"cut_values,omitempty"`
	// MaxValueBytes is the limit CutValues refers to.
	MaxValueBytes int `json:"max_value_bytes,omitempty"`
}

// Limits bound what a query reads into memory, whatever the statement
// asks for: a single huge value or a table of thousands of columns cannot
// exhaust memory.
type Limits struct {
	// MaxValueBytes is the most bytes of one value read (default
	// DefaultMaxValueBytes). Text and blobs are cut in SQL, before they
	// reach this process.
	MaxValueBytes int
	// MaxColumns is the most columns of a result read (default
	// DefaultMaxColumns); the rest are left out and counted.
	MaxColumns int
	// MaxCells bounds rows × columns of a result (default
	// DefaultMaxCells): a wide result gets fewer rows.
	MaxCells int
}

// The default Limits.
const (
	DefaultMaxValueBytes = 4 << 10
	DefaultMaxColumns    = 64
	DefaultMaxCells      = 4000
)

func (l Limits) withDefaults() Limits {
	if l.MaxValueBytes <= 0 {
		l.MaxValueBytes = DefaultMaxValueBytes
	}
	if l.MaxColumns <= 0 {
		l.MaxColumns = DefaultMaxColumns
	}
	if l.MaxCells <= 0 {
		l.MaxCells = DefaultMaxCells
	}
	return l
}

// maxCell is the most runes a value keeps when rendered for a model.
const maxCell = 160

// Render formats the rows compactly for a model: a header, one line per
// row with values separated by " | ", NULL for nulls, and a last line
// counting the rows (saying when the limit cut them short).
func (r *Rows) Render() string {
	var b strings.Builder
	b.WriteString(strings.Join(r.Columns, " | "))
	b.WriteByte('\n')
	for _, row := range r.Rows {
		for i, v := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			switch {
			case v == nil:
				b.WriteString("NULL")
			case utf8.RuneCountInString(*v) > maxCell:
				b.WriteString(string([]rune(*v)[:maxCell]) + "…")
			default:
				b.WriteString(strings.ReplaceAll(*v, "\n", " "))
			}
		}
		b.WriteByte('\n')
	}
	switch {
	case r.Truncated:
		fmt.Fprintf(&b, "(first %d rows only: narrow the WHERE clause or aggregate to see the rest)", len(r.Rows))
	case len(r.Rows) == 1:
		b.WriteString("(1 row)")
	default:
		fmt.Fprintf(&b, "(%d rows)", len(r.Rows))
	}
	if r.OmittedColumns > 0 {
		fmt.Fprintf(&b, "\n(%d more columns not shown: name the columns you need instead of SELECT *)", r.OmittedColumns)
	}
	if r.CutValues > 0 {
		fmt.Fprintf(&b, "\n(%d values longer than %d bytes were cut: select substr(column, start, length) to read a part)", r.CutValues, r.MaxValueBytes)
	}
	return b.String()
}

// ErrNotReadOnly is wrapped by the error returned for a statement that is
// not a single read: the statement was not run.
var ErrNotReadOnly = errors.New("not a read-only statement")

// RefusedError says why a statement was refused. It wraps ErrNotReadOnly.
type RefusedError struct {
	// Reason says what is wrong, in words a model can act on.
	Reason string
}

func (e *RefusedError) Error() string {
	return "query refused: " + e.Reason + "; this database is read-only: send one SELECT (or WITH ... SELECT) statement"
}

// Unwrap returns ErrNotReadOnly.
func (e *RefusedError) Unwrap() error { return ErrNotReadOnly }

func refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// writeWords are keywords of statements that change a database or its
// connection; a read-only query never contains them outside quotes.
var writeWords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true, "UPSERT": true,
	"DROP": true, "CREATE": true, "ALTER": true, "ATTACH": true, "DETACH": true,
	"VACUUM": true, "REINDEX": true, "ANALYZE": true, "PRAGMA": true,
	"BEGIN": true, "COMMIT": true, "ROLLBACK": true, "SAVEPOINT": true, "RELEASE": true,
	"LOAD_EXTENSION": true,
}

// readPragmas are the PRAGMAs allowed as a whole statement: they describe
// a table and change nothing.
var readPragmas = map[string]bool{
	"TABLE_INFO": true, "TABLE_XINFO": true, "INDEX_LIST": true, "INDEX_INFO": true, "FOREIGN_KEY_LIST": true,
}

// CheckReadOnly reports whether query is a single statement that only
// reads: SELECT, WITH ... SELECT, VALUES, EXPLAIN [QUERY PLAN] of those, or
// PRAGMA table_info/table_xinfo/index_list/index_info/foreign_key_list
// without an assignment. Comments and quoted text are skipped, so a
// keyword inside a string never trips it; any keyword of a writing
// statement elsewhere (INSERT, UPDATE, DELETE, REPLACE, DROP, CREATE,
// ALTER, ATTACH, PRAGMA, transaction control...) does, as does a second
// statement after a semicolon. The error is a *RefusedError.
//
// This check is the first of two guards: SQLiteDB also opens the file
// read-only and with PRAGMA query_only, so a statement this check missed
// would still fail in SQLite.
func CheckReadOnly(query string) error {
	toks, err := lex(query)
	if err != nil {
		return err
	}
	// Trailing semicolons are harmless; anything after a semicolon is a
	// second statement.
	for len(toks) > 0 && toks[len(toks)-1] == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return refuse("the statement is empty")
	}
	for i, t := range toks {
		if t == ";" {
			return refuse("only one statement may be sent, and this one goes on after a semicolon (%s ...)", strings.Join(toks[i+1:min(i+3, len(toks))], " "))
		}
	}
	first := toks[0]
	rest := toks[1:]
	if first == "EXPLAIN" {
		if len(rest) >= 2 && rest[0] == "QUERY" && rest[1] == "PLAN" {
			rest = rest[2:]
		}
		if len(rest) == 0 {
			return refuse("EXPLAIN needs a statement to explain")
		}
		first, rest = rest[0], rest[1:]
	}
	switch first {
	case "SELECT", "WITH", "VALUES":
	case "PRAGMA":
		if len(rest) == 0 || !readPragmas[rest[0]] {
			return refuse("only PRAGMA table_info, table_xinfo, index_list, index_info and foreign_key_list may be read here")
		}
		for _, t := range rest {
			if t == "=" {
				return refuse("PRAGMA assignments change the connection")
			}
		}
		return nil
	default:
		return refuse("%s is not a read statement", first)
	}
	for i, t := range rest {
		if !writeWords[t] {
			continue
		}
		if t == "REPLACE" && i+1 < len(rest) && rest[i+1] == "(" {
			continue // the replace() string function
		}
		return refuse("it contains %s, which changes data", t)
	}
	return nil
}

// lex splits query into upper-cased words, single punctuation characters
// and placeholders for quoted text, dropping comments and spaces.
func lex(q string) ([]string, error) {
	var toks []string
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(q[i:], "--"):
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				return toks, nil
			}
			i += end + 1
		case strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return nil, refuse("a /* comment is never closed")
			}
			i += 2 + end + 2
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := i + 1
			for {
				k := strings.IndexByte(q[j:], closer)
				if k < 0 {
					return nil, refuse("a quote opened with %c is never closed", c)
				}
				j += k + 1
				// A doubled quote is an escaped quote inside the text.
				if closer != ']' && j < len(q) && q[j] == closer {
					j++
					continue
				}
				break
			}
			if c == '\'' {
				toks = append(toks, "'…'")
			} else {
				toks = append(toks, "\"…\"")
			}
			i = j
		case c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9'):
			j := i
			for j < len(q) {
				d := q[j]
				if d == '_' || d == '$' || d >= 0x80 || ('a' <= d && d <= 'z') || ('A' <= d && d <= 'Z') || ('0' <= d && d <= '9') || d == '.' && j > i && '0' <= q[i] && q[i] <= '9' {
					j++
					continue
				}
				break
			}
			toks = append(toks, strings.ToUpper(q[i:j]))
			i = j
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	return toks, nil
}

// SQLiteDB is a Database over a SQLite file opened read-only: the file is
// opened with mode=ro and every connection with PRAGMA query_only, and each
// statement must pass CheckReadOnly first. Create one with OpenReadOnly.
type SQLiteDB struct {
	db *sql.DB
	// Timeout bounds each query (default 10 seconds).
	Timeout time.Duration
	// Limits bound what each query reads (zero fields: the defaults).
	Limits Limits
}

// OpenReadOnly opens the SQLite database at path for reading only. The
// file must exist: opening never creates one (each example creates its
// sample data with a writable connection of its own first).
func OpenReadOnly(ctx context.Context, path string) (*SQLiteDB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlread: open %s: %w", path, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "busy_timeout(5000)")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("sqlread: open %s read-only: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlread: open %s read-only (does the file exist?): %w", path, err)
	}
	return &SQLiteDB{db: db, Timeout: 10 * time.Second}, nil
}

// Close closes the database.
func (d *SQLiteDB) Close() error { return d.db.Close() }

// Tables returns the user tables and their CREATE statements.
func (d *SQLiteDB) Tables(ctx context.Context) ([]Table, error) {
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	// Schema text is the database's own, not a model's query: a wide
	// table's definition is kept whole up to a generous bound.
	lim := Limits{MaxValueBytes: 1 << 20, MaxColumns: 2, MaxCells: 2 * 1000}
	rows, err := d.scan(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`, nil, 1000, lim)
	if err != nil {
		return nil, err
	}
	out := make([]Table, 0, len(rows.Rows))
	for _, r := range rows.Rows {
		if r[0] == nil || r[1] == nil {
			continue
		}
		out = append(out, Table{Name: *r[0], SQL: *r[1]})
	}
	return out, nil
}

// Query checks query with CheckReadOnly and runs it, returning at most
// maxRows rows (at least 1) within d.Limits. The statement runs wrapped in
// an outer SELECT that reads only the first Limits.MaxColumns columns and
// cuts text and blobs to Limits.MaxValueBytes in SQL, so a huge value never
// reaches this process whole. A statement that cannot be wrapped (EXPLAIN)
// runs as it is, its values cut as they are scanned.
func (d *SQLiteDB) Query(ctx context.Context, query string, maxRows int) (*Rows, error) {
	if err := CheckReadOnly(query); err != nil {
		return nil, err
	}
	maxRows = max(maxRows, 1)
	lim := d.Limits.withDefaults()
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	body := strings.TrimRight(strings.TrimSpace(query), "; \t\r\n")
	inner := "(\n" + body + "\n)"
	var all []string
	if rs, err := d.db.QueryContext(ctx, "SELECT * FROM "+inner+" LIMIT 0"); err == nil {
		all, err = rs.Columns()
		rs.Close()
		if err != nil {
			all = nil
		}
	}
	if all == nil {
		// Not wrappable (or wrong: the plain statement gives the error
		// the model should see).
		return d.scan(ctx, query, nil, maxRows, lim)
	}
	cols := all[:min(len(all), lim.MaxColumns)]
	// The statement becomes a CTE whose column list names its columns by
	// position (c1, c2...), so duplicate or odd names cannot mix columns
	// up.
	names := make([]string, len(all))
	for i := range all {
		names[i] = fmt.Sprintf("c%d", i+1)
	}
	exprs := make([]string, len(cols))
	for i := range cols {
		// One byte (or character) more than the limit tells a cut value
		// from one that fits exactly.
		exprs[i] = fmt.Sprintf("CASE WHEN typeof(%[1]s) IN ('text', 'blob') THEN substr(%[1]s, 1, %[2]d) ELSE %[1]s END", names[i], lim.MaxValueBytes+1)
	}
	rowLimit := min(maxRows, max(lim.MaxCells/max(len(cols), 1), 1))
	wrapped := fmt.Sprintf("WITH trellis_q(%s) AS %s SELECT %s FROM trellis_q LIMIT %d", strings.Join(names, ", "), inner, strings.Join(exprs, ", "), rowLimit+1)
	out, err := d.scan(ctx, wrapped, cols, rowLimit, lim)
	if err != nil {
		return nil, err
	}
	out.OmittedColumns = len(all) - len(cols)
	return out, nil
}

// scan runs q and reads at most maxRows rows, each value cut to
// lim.MaxValueBytes; names replaces the driver's column names when set.
// Without names (a statement run unwrapped), the columns past
// lim.MaxColumns are dropped as they are scanned.
func (d *SQLiteDB) scan(ctx context.Context, q string, names []string, maxRows int, lim Limits) (*Rows, error) {
	return scan(ctx, d.db, q, names, maxRows, lim)
}

// queryer is a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scan runs q on db (see SQLiteDB.scan).
func scan(ctx context.Context, db queryer, q string, names []string, maxRows int, lim Limits) (*Rows, error) {
	rs, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("query failed: %w", err)
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, fmt.Errorf("query failed: %w", err)
	}
	out := &Rows{Rows: [][]*string{}, MaxValueBytes: lim.MaxValueBytes}
	keep := min(len(cols), lim.MaxColumns)
	out.Columns = slices.Clone(cols[:keep])
	if names != nil {
		out.Columns = slices.Clone(names)
	}
	out.OmittedColumns = len(cols) - keep
	maxRows = min(maxRows, max(lim.MaxCells/max(keep, 1), 1))
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if len(out.Rows) == maxRows {
			out.Truncated = true
			break
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("query failed: %w", err)
		}
		row := make([]*string, keep)
		for i, v := range vals[:keep] {
			var cut bool
			row[i], cut = text(v, lim.MaxValueBytes)
			if cut {
				out.CutValues++
			}
		}
		clear(vals)
		out.Rows = append(out.Rows, row)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("query failed: %w", err)
	}
	return out, nil
}

// QuoteIdent quotes name as a SQL identifier (a table or column name),
// doubling any double quote inside it, so it can be put into a statement
// as it is.
func QuoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// text renders a SQLite value cut to limit bytes (on a character
// boundary), reporting whether it was cut; nil stays nil.
func text(v any, limit int) (*string, bool) {
	var s string
	switch v := v.(type) {
	case nil:
		return nil, false
	case string:
		s = v
	case []byte:
		if utf8.Valid(v) {
			s = string(v[:min(len(v), limit+1)])
		} else {
			cut := len(v) > limit
			v = v[:min(len(v), limit/2)] // two hex digits per byte
			s = fmt.Sprintf("x'%x'", v)
			if cut {
				s += "…"
			}
			return &s, cut
		}
	case int64:
		s = strconv.FormatInt(v, 10)
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		s = strconv.FormatBool(v)
	case time.Time:
		s = v.Format(time.RFC3339Nano)
	default:
		s = fmt.Sprint(v)
	}
	if len(s) <= limit {
		return &s, false
	}
	i := limit
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	s = s[:i] + "…"
	return &s, true
}

// SQLToolName is the name of the tool SQLTool returns.
const SQLToolName = "query_sql"

type sqlArgs struct {
	SQL string `json:"sql" jsonschema:"one read-only statement: SELECT, WITH ... SELECT or EXPLAIN"`
}

// SQLTool returns db as a read tool for agents that query by themselves:
// it takes {"sql": "..."} and returns the rendered rows (at most maxRows).
// A statement that could write is refused by the tool itself, whatever the
// model was told, with an argument error the model can act on.
func SQLTool(db Database, maxRows int) tool.Tool {
	return tool.MustFunc(SQLToolName, "Run one read-only SQL query (SELECT) against the database and see the rows.",
		func(ctx context.Context, a sqlArgs) (string, error) {
			rows, err := db.Query(ctx, a.SQL, maxRows)
			if errors.Is(err, ErrNotReadOnly) {
				return "", &tool.ArgumentError{Tool: SQLToolName, Problem: err.Error(), Err: err}
			}
			if err != nil {
				return "", err
			}
			return rows.Render(), nil
		}, tool.ReadOnly())
}
