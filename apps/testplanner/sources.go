package testplanner

import (
	"context"
	"encoding/json"

	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/tool"
)

// The planner reads two things through pluggable sources: the tool
// catalogue (a ToolSource: an MCP server's *mcp.Client, or TableCatalogue
// over a SQL table) and the database rows (a sqlread.Database:
// sqlread.SQLiteDB, sqlread.PostgresDB, or MCPDatabase over an MCP server
// that exposes the database as tools).

// TableCatalogue is a ToolSource reading the tool catalogue from a table
// of a database (SQLite or PostgreSQL, read-only): one row per tool with
// the columns name, description and input_schema (a JSON schema, may be
// NULL) and, when present, read_only (1/true for a tool that only reads).
// The catalogue's tools are descriptions only: calling one is an error.
type TableCatalogue struct {
	DB sqlread.Database
	// Table is the catalogue's table (default "tool_catalogue").
	Table string
	// MaxTools bounds the rows read (default 1000).
	MaxTools int
}

// Tools reads the catalogue.
func (c TableCatalogue) Tools(ctx context.Context) ([]tool.Tool, error) {
	table := c.Table
	if table == "" {
		table = "tool_catalogue"
	}
	limit := c.MaxTools
	if limit <= 0 {
		limit = 1000
	}
	rows, err := c.DB.Query(ctx, "SELECT * FROM "+sqlread.QuoteIdent(table), limit)
	if err != nil {
		return nil, fmt.Errorf("read the tool catalogue table %s: %w", table, err)
	}
	col := map[string]int{}
	for i, n := range rows.Columns {
		col[strings.ToLower(n)] = i
	}
	if _, ok := col["name"]; !ok {
		return nil, fmt.Errorf("the tool catalogue table %s has no name column (its columns: %s)", table, strings.Join(rows.Columns, ", "))
	}
	get := func(r []*string, name string) string {
		if i, ok := col[name]; ok && i < len(r) && r[i] != nil {
			return *r[i]
		}
		return ""
	}
	var out []tool.Tool
	for _, r := range rows.Rows {
		info := tool.Info{Name: get(r, "name"), Description: get(r, "description")}
		if s := get(r, "input_schema"); s != "" {
			if !json.Valid([]byte(s)) {
				return nil, fmt.Errorf("the catalogue's input_schema of %s is not JSON", info.Name)
			}
			info.Parameters = json.RawMessage(s)
		}
		switch strings.ToLower(get(r, "read_only")) {
		case "1", "true", "t", "yes":
			info.ReadOnly = true
		}
		out = append(out, described{info})
	}
	if rows.Truncated {
		return nil, fmt.Errorf("the tool catalogue table %s has more than %d rows; raise TableCatalogue.MaxTools", table, limit)
	}
	return out, nil
}

// described is a tool known by its description only.
type described struct{ info tool.Info }

func (d described) Info() tool.Info { return d.info }
func (d described) Call(context.Context, json.RawMessage) (string, error) {
	return "", fmt.Errorf("%s comes from a catalogue and cannot be called here", d.info.Name)
}

// MCPDatabase is a sqlread.Database over an MCP server that exposes a
// database as two tools: one listing the tables (TablesTool, no
// arguments; it returns a JSON array of {"name", "sql"}) and one running
// a query (QueryTool, arguments {"sql": "...", "max_rows": n}; it returns
// a JSON object {"columns": [...], "rows": [[...]]}, values as strings or
// null). Every statement is checked with sqlread.CheckReadOnly before it
// is sent, whatever the server does with it; the server should refuse
// writes too.
type MCPDatabase struct {
	Server ToolSource
	// TablesTool and QueryTool name the two tools (default "list_tables"
	// and "query").
	TablesTool, QueryTool string
}

func (d MCPDatabase) tool(ctx context.Context, name string) (tool.Tool, error) {
	ts, err := d.Server.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the database server's tools: %w", err)
	}
	var names []string
	for _, t := range ts {
		if t.Info().Name == name {
			return t, nil
		}
		names = append(names, t.Info().Name)
	}
	return nil, fmt.Errorf("the database server has no tool %q (its tools: %s)", name, strings.Join(names, ", "))
}

// Tables calls the tables tool.
func (d MCPDatabase) Tables(ctx context.Context) ([]sqlread.Table, error) {
	name := d.TablesTool
	if name == "" {
		name = "list_tables"
	}
	t, err := d.tool(ctx, name)
	if err != nil {
		return nil, err
	}
	out, err := t.Call(ctx, json.RawMessage(`{}`))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var tables []sqlread.Table
	if err := json.Unmarshal([]byte(out), &tables); err != nil {
		return nil, fmt.Errorf("%s did not return a JSON array of {name, sql}: %w", name, err)
	}
	return tables, nil
}

// Query checks query with sqlread.CheckReadOnly and calls the query tool.
func (d MCPDatabase) Query(ctx context.Context, query string, maxRows int) (*sqlread.Rows, error) {
	if err := sqlread.CheckReadOnly(query); err != nil {
		return nil, err
	}
	name := d.QueryTool
	if name == "" {
		name = "query"
	}
	t, err := d.tool(ctx, name)
	if err != nil {
		return nil, err
	}
	maxRows = max(maxRows, 1)
	args, _ := json.Marshal(map[string]any{"sql": query, "max_rows": maxRows})
	out, err := t.Call(ctx, args)
	if err != nil {
		return nil, fmt.Errorf("query failed: %w", err)
	}
	var rows sqlread.Rows
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		return nil, fmt.Errorf("query failed: %s did not return {columns, rows} JSON: %w", name, err)
	}
	if len(rows.Rows) > maxRows {
		rows.Rows, rows.Truncated = rows.Rows[:maxRows], true
	}
	return &rows, nil
}

var _ sqlread.Database = MCPDatabase{}
