package db

import (
	"context"
	"fmt"
	"time"
)

// ColumnType is the type of a column in Tables, and so the Go type of its
// values in a Row.
type ColumnType int

// Column types and their Go values (nil when the column is NULL).
const (
	ColText  ColumnType = iota + 1 // string
	ColInt                         // int64
	ColBool                        // bool
	ColTime                        // time.Time, UTC, microseconds
	ColJSON                        // []byte holding JSON text
	ColBytes                       // []byte
)

// Column is one column of a Table.
type Column struct {
	Name string
	Type ColumnType
	Null bool // may be NULL (a nil value)
}

// Table is one table of the store of record, as Exporter copies it. Both
// backends name its columns alike.
type Table struct {
	Name    string
	Columns []Column
	// Key is how many of the first Columns form the primary key; rows are
	// exported in its order.
	Key int
}

// Index returns the position of the named column, or -1.
func (t Table) Index(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Row is one row of a Table: one value per column, typed as the column's
// ColumnType says.
type Row []any

// Check reports a row whose length or value types do not match the table.
func (t Table) Check(r Row) error {
	if len(r) != len(t.Columns) {
		return fmt.Errorf("db: a row of %s has %d values, want %d", t.Name, len(r), len(t.Columns))
	}
	for i, c := range t.Columns {
		v := r[i]
		if v == nil {
			if !c.Null {
				return fmt.Errorf("db: %s.%s is NULL in a row, which the column does not allow", t.Name, c.Name)
			}
			continue
		}
		ok := false
		switch c.Type {
		case ColText:
			_, ok = v.(string)
		case ColInt:
			_, ok = v.(int64)
		case ColBool:
			_, ok = v.(bool)
		case ColTime:
			_, ok = v.(time.Time)
		case ColJSON, ColBytes:
			_, ok = v.([]byte)
		}
		if !ok {
			return fmt.Errorf("db: %s.%s holds a %T, which is not the column's type", t.Name, c.Name, v)
		}
	}
	return nil
}

func cols(spec ...any) []Column {
	var out []Column
	for i := 0; i < len(spec); i += 2 {
		c := Column{Name: spec[i].(string), Type: spec[i+1].(ColumnType)}
		if len(c.Name) > 0 && c.Name[len(c.Name)-1] == '?' {
			c.Name, c.Null = c.Name[:len(c.Name)-1], true
		}
		out = append(out, c)
	}
	return out
}

// Tables are the store of record's tables, every tenant's rows, in an
// order that inserts a row after the rows it refers to. Exporter copies
// them; `trellis transfer` walks them.
var Tables = []Table{
	{Name: "trellis_assistants", Key: 2, Columns: cols(
		"tenant", ColText, "assistant_id", ColText, "graph_id", ColText, "name", ColText, "description", ColText,
		"config", ColJSON, "context", ColJSON, "metadata", ColJSON, "version", ColInt,
		"created_at", ColTime, "updated_at", ColTime)},
	{Name: "trellis_assistant_versions", Key: 3, Columns: cols(
		"tenant", ColText, "assistant_id", ColText, "version", ColInt, "graph_id", ColText, "name", ColText,
		"description", ColText, "config", ColJSON, "context", ColJSON, "metadata", ColJSON, "created_at", ColTime)},
	{Name: "trellis_threads", Key: 2, Columns: cols(
		"tenant", ColText, "thread_id", ColText, "status", ColText, "metadata", ColJSON, "thread_values?", ColJSON,
		"interrupts", ColJSON, "error", ColText, "created_at", ColTime, "updated_at", ColTime,
		"ttl_us?", ColInt, "ttl_strategy", ColText, "expires_at?", ColTime)},
	{Name: "trellis_checkpoint_metadata", Key: 3, Columns: cols(
		"tenant", ColText, "thread_id", ColText, "checkpoint_id", ColText, "metadata", ColJSON, "updated_at", ColTime)},
	{Name: "trellis_runs", Key: 2, Columns: cols(
		"tenant", ColText, "run_id", ColText, "thread_id", ColText, "assistant_id", ColText, "status", ColText,
		"metadata", ColJSON, "kwargs", ColJSON, "multitask_strategy", ColText, "usage?", ColJSON, "error", ColText,
		"created_at", ColTime, "updated_at", ColTime, "ended_at?", ColTime, "not_before?", ColTime,
		"cancel_requested", ColText, "seq", ColInt, "lease_token", ColInt, "event_seq", ColInt,
		"assistant_version?", ColInt, "lease_owner?", ColText, "lease_expires_at?", ColTime)},
	{Name: "trellis_run_events", Key: 3, Columns: cols(
		"tenant", ColText, "run_id", ColText, "seq", ColInt, "event", ColText, "data", ColBytes, "created_at", ColTime)},
	{Name: "trellis_crons", Key: 2, Columns: cols(
		"tenant", ColText, "cron_id", ColText, "assistant_id", ColText, "thread_id?", ColText, "user_id", ColText,
		"schedule", ColText, "timezone", ColText, "payload", ColJSON, "metadata", ColJSON, "next_run_at?", ColTime,
		"end_time?", ColTime, "enabled", ColBool, "on_run_completed", ColText, "created_at", ColTime, "updated_at", ColTime)},
	{Name: "trellis_run_feedback", Key: 2, Columns: cols(
		"tenant", ColText, "feedback_id", ColText, "thread_id", ColText, "run_id", ColText, "key", ColText,
		"score?", ColJSON, "value?", ColJSON, "comment", ColText, "correction?", ColJSON, "message_id", ColText, "created_at", ColTime, "source", ColText)},
	{Name: "trellis_datasets", Key: 2, Columns: cols(
		"tenant", ColText, "dataset_id", ColText, "name", ColText, "description", ColText, "metadata", ColJSON,
		"criteria", ColJSON, "version", ColInt, "created_at", ColTime, "updated_at", ColTime)},
	{Name: "trellis_dataset_cases", Key: 4, Columns: cols(
		"tenant", ColText, "dataset_id", ColText, "case_id", ColText, "version_added", ColInt, "version_removed?", ColInt,
		"position", ColInt, "data", ColJSON, "created_at", ColTime)},
	{Name: "trellis_experiments", Key: 2, Columns: cols(
		"tenant", ColText, "experiment_id", ColText, "name", ColText, "dataset_id", ColText, "dataset_version", ColInt,
		"assistant_id", ColText, "repetitions", ColInt, "concurrency", ColInt, "baseline_id", ColText, "metadata", ColJSON,
		"status", ColText, "total", ColInt, "summary?", ColJSON, "error", ColText, "created_at", ColTime, "updated_at", ColTime,
		"assistant_version", ColInt, "criteria?", ColJSON)},
	{Name: "trellis_experiment_results", Key: 4, Columns: cols(
		"tenant", ColText, "experiment_id", ColText, "case_id", ColText, "repetition", ColInt, "passed", ColBool,
		"data", ColJSON, "created_at", ColTime)},
	{Name: "trellis_api_keys", Key: 1, Columns: cols(
		"key_id", ColText, "tenant", ColText, "name", ColText, "prefix", ColText, "hash", ColBytes,
		"created_at", ColTime, "last_used_at?", ColTime, "revoked_at?", ColTime)},
}

// LegacyLeases is the table trellis_leases of the schemas before a run's
// lease moved onto its row (trellis_runs' lease_owner, lease_token and
// lease_expires_at): Tables no longer lists it, and no DB exports it, but
// an Exporter still imports its rows, after their runs (which may lack
// the lease columns: they are NULL, no lease). Each row gives its run
// the lease unless a lease holds the run already; a row whose run is
// missing is skipped. Either way it counts as inserted only when it
// changed the run.
var LegacyLeases = Table{Name: "trellis_leases", Key: 2, Columns: cols(
	"tenant", ColText, "run_id", ColText, "thread_id", ColText, "owner", ColText, "token", ColInt, "expires_at", ColTime)}

// Exporter is an optional interface of a DB whose rows can be copied, every
// tenant's, to another DB of either backend (`trellis transfer`). Both
// backends implement it; the dbtest suite checks it.
type Exporter interface {
	// ExportRows returns up to limit rows of t in primary-key order, those
	// whose key is after after's first t.Key values (nil: from the first
	// row). limit must be positive.
	ExportRows(ctx context.Context, t Table, after Row, limit int) ([]Row, error)
	// ImportRows inserts rows into t in one transaction, as they are
	// (times, sequence numbers and hashes kept). A row whose primary key
	// (or another unique column, such as a key's hash) the DB has already
	// is left as it is, so importing twice changes nothing. It reports how
	// many rows it inserted. A row not matching t (Table.Check) is an
	// error.
	ImportRows(ctx context.Context, t Table, rows []Row) (int, error)
}
