package sqlrouter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/tool"
)

// The names of the tools the sub-agents (and the router) use. The execute
// agent queries with sqlread.SQLTool, named sqlread.SQLToolName.
const (
	ListTablesName    = "list_tables"
	DescribeTableName = "describe_table"
	SampleRowsName    = "sample_rows"
	ValidateSQLName   = "validate_sql"
)

// Bounds of the read tools.
const (
	// DefaultSampleRows is how many rows sample_rows returns unless asked
	// for another number; MaxSampleRows is the most it returns.
	DefaultSampleRows = 5
	MaxSampleRows     = 20
	// MaxResultRows is the most rows the execute agent's query returns.
	MaxResultRows = 50
)

// Verdicts of validate_sql: a result starts with one of them.
const (
	Valid   = "valid:"
	Invalid = "invalid:"
)

// SchemaUnreadable marks the part of a schema tool's result that says what
// could not be read: the tool answers with what it could see instead of
// failing, so the agents go on and say what they could not check.
const SchemaUnreadable = "SCHEMA PARTLY UNREADABLE:"

// tables is the list of tables of db, or an error saying the database
// could not be read.
func tables(ctx context.Context, db sqlread.Database) ([]sqlread.Table, error) {
	ts, err := db.Tables(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the list of tables failed: %w", err)
	}
	return ts, nil
}

// lookupTable finds name among the tables (case-insensitively, as SQLite
// does), or returns an argument error listing the tables there are.
func lookupTable(ctx context.Context, db sqlread.Database, toolName, name string) (sqlread.Table, error) {
	ts, err := tables(ctx, db)
	if err != nil {
		return sqlread.Table{}, err
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		if strings.EqualFold(t.Name, strings.TrimSpace(name)) {
			return t, nil
		}
		names[i] = t.Name
	}
	return sqlread.Table{}, tool.BadArguments(toolName, "there is no table %q; the tables are %s", name, strings.Join(names, ", "))
}

// count returns the number of rows of the table, as text.
func count(ctx context.Context, db sqlread.Database, table string) (string, error) {
	rows, err := db.Query(ctx, "SELECT count(*) FROM "+sqlread.QuoteIdent(table), 1)
	if err != nil {
		return "", err
	}
	if len(rows.Rows) != 1 || len(rows.Rows[0]) != 1 || rows.Rows[0][0] == nil {
		return "", fmt.Errorf("counting the rows of %s returned no number", table)
	}
	return *rows.Rows[0][0], nil
}

// ListTablesTool lists the tables of db with their row counts (a read
// tool).
func ListTablesTool(db sqlread.Database) tool.Tool {
	return tool.MustFunc(ListTablesName, "List the tables of the database, with how many rows each holds.",
		func(ctx context.Context, _ struct{}) (string, error) {
			ts, err := tables(ctx, db)
			if err != nil {
				if ctx.Err() != nil {
					return "", err
				}
				// Degrade: say what could not be seen, and let the agent
				// go on with what its task tells it.
				return fmt.Sprintf("%s the list of tables could not be read (%v). Nothing about the tables could be checked: "+
					"work with the tables the task names, and say in your answer that the schema could not be read.", SchemaUnreadable, err), nil
			}
			if len(ts) == 0 {
				return "The database has no tables.", nil
			}
			var b strings.Builder
			for _, t := range ts {
				n, err := count(ctx, db, t.Name)
				if err != nil {
					if ctx.Err() != nil {
						return "", ctx.Err()
					}
					fmt.Fprintf(&b, "%s (%s the row count could not be read: %v)\n", t.Name, SchemaUnreadable, err)
					continue
				}
				fmt.Fprintf(&b, "%s (%s rows)\n", t.Name, n)
			}
			return strings.TrimSuffix(b.String(), "\n"), nil
		}, tool.ReadOnly())
}

type tableArgs struct {
	Table string `json:"table" jsonschema:"the name of a table, as list_tables gives it"`
}

// DescribeTableTool returns a table's definition (its CREATE TABLE
// statement, with types, keys and constraints) and its row count (a read
// tool).
func DescribeTableTool(db sqlread.Database) tool.Tool {
	return tool.MustFunc(DescribeTableName, "Describe one table: its CREATE TABLE statement (columns, types, keys, allowed values) and its row count.",
		func(ctx context.Context, a tableArgs) (string, error) {
			t, err := lookupTable(ctx, db, DescribeTableName, a.Table)
			if err != nil {
				return "", err
			}
			n, err := count(ctx, db, t.Name)
			if err != nil {
				if ctx.Err() != nil {
					return "", err
				}
				return fmt.Sprintf("%s;\n-- %s the row count could not be read: %v", strings.TrimSpace(t.SQL), SchemaUnreadable, err), nil
			}
			return fmt.Sprintf("%s;\n-- %s rows", strings.TrimSpace(t.SQL), n), nil
		}, tool.ReadOnly())
}

type sampleArgs struct {
	Table string `json:"table" jsonschema:"the name of a table, as list_tables gives it"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many rows, 1 to 20 (default 5)"`
}

// SampleRowsTool returns the first rows of a table, to see what its values
// look like (a read tool).
func SampleRowsTool(db sqlread.Database) tool.Tool {
	return tool.MustFunc(SampleRowsName, "Show the first rows of one table, to see what its values look like (date formats, codes, spellings).",
		func(ctx context.Context, a sampleArgs) (string, error) {
			if a.Limit < 0 || a.Limit > MaxSampleRows {
				return "", tool.BadArguments(SampleRowsName, `"limit" is %d; ask for 1 to %d rows, or leave it out for %d`, a.Limit, MaxSampleRows, DefaultSampleRows)
			}
			limit := cmp.Or(a.Limit, DefaultSampleRows)
			t, err := lookupTable(ctx, db, SampleRowsName, a.Table)
			if err != nil {
				return "", err
			}
			rows, err := db.Query(ctx, fmt.Sprintf("SELECT * FROM %s LIMIT %d", sqlread.QuoteIdent(t.Name), limit), limit)
			if err != nil {
				return "", err
			}
			return rows.Render(), nil
		}, tool.ReadOnly())
}

type sqlArgs struct {
	SQL string `json:"sql" jsonschema:"one SQLite SELECT (or WITH ... SELECT) statement; a code fence around it is ignored"`
}

// ValidateSQLTool checks a query without running it, on the database's
// own engine (sqlread.Validate): SQLite compiles it (EXPLAIN QUERY PLAN),
// PostgreSQL parses and plans it (EXPLAIN in a read-only transaction that
// is rolled back). Both fail on unknown tables or columns and on syntax
// errors. The result starts with Valid (and shows the plan) or Invalid
// (and gives the engine's error, as the fix agent needs it). A statement
// that could write is not a query to validate: the read-only layer
// refuses it, and the call fails with an argument error saying so.
func ValidateSQLTool(db sqlread.Database) tool.Tool {
	engine := sqlread.Dialect(db)
	return tool.MustFunc(ValidateSQLName, "Check one "+engine+" query without running it: "+engine+" parses and plans it against the database (EXPLAIN). "+
		`The result starts with "valid:" and shows the plan, or with "invalid:" and gives `+engine+`'s error. Only read queries are accepted.`,
		func(ctx context.Context, a sqlArgs) (string, error) {
			q := ExtractSQL(a.SQL)
			plan, err := sqlread.Validate(ctx, db, q)
			if errors.Is(err, sqlread.ErrNotReadOnly) || errors.Is(err, sqlread.ErrExplain) {
				return "", &tool.ArgumentError{Tool: ValidateSQLName, Problem: err.Error(), Err: err}
			}
			if err != nil {
				if ctx.Err() != nil {
					return "", err
				}
				return fmt.Sprintf("%s %s cannot compile the query: %s", Invalid, engine, strings.TrimPrefix(err.Error(), "query failed: ")), nil
			}
			return fmt.Sprintf("%s %s compiles the query against this database.\nPlan:\n%s", Valid, engine, plan), nil
		}, tool.ReadOnly())
}

// ExtractSQL returns the SQL in text: the inside of its first ``` code
// fence (with or without a language tag), or else the text itself,
// trimmed. Models often wrap a query in a fence even when told not to.
func ExtractSQL(text string) string {
	s := strings.TrimSpace(text)
	start := strings.Index(s, "```")
	if start < 0 {
		return s
	}
	body := s[start+3:]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 {
		switch strings.ToLower(strings.TrimSpace(body[:nl])) {
		case "", "sql", "sqlite":
			body = body[nl+1:] // the language tag
		}
	}
	if end := strings.Index(body, "```"); end >= 0 {
		body = body[:end]
	}
	return strings.TrimSpace(body)
}
