package sqlcore

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"reflect"
	"strings"
)

// Queries holds a dialect's statements, one field a statement, filled
// from the dialect's query files by Load. The comment on a field says what
// the statement's numbered parameters are and which columns it returns.
type Queries struct {
	// GetDataset ($1 tenant, $2 dataset ID) returns a dataset's columns
	// (see scanDataset).
	GetDataset string
	// GetDatasetForUpdate is GetDataset locking the row until the
	// transaction ends, where the dialect needs it.
	GetDatasetForUpdate string
	// InsertDataset ($1 tenant, $2 ID, $3 name, $4 description, $5
	// metadata, $6 criteria, $7 now) stores a dataset at version 1.
	InsertDataset string
	// UpdateDataset ($1 name, $2 description, $3 metadata, $4 criteria, $5
	// now, $6 tenant, $7 ID).
	UpdateDataset string
	// DeleteDataset ($1 tenant, $2 ID).
	DeleteDataset string
	// SearchDatasets ($1 tenant, $2 name substring, case-insensitive, $3
	// limit, $4 offset), newest first.
	SearchDatasets string
	// SetDatasetVersion ($1 version, $2 now, $3 tenant, $4 ID).
	SetDatasetVersion string
	// LastCasePosition ($1 tenant, $2 dataset ID) returns the highest case
	// position, 0 for none.
	LastCasePosition string
	// InsertCase ($1 tenant, $2 dataset ID, $3 case ID, $4 version added,
	// $5 position, $6 data, $7 now).
	InsertCase string
	// TakenCase ($1 tenant, $2 dataset ID, $3 list of case IDs, see
	// Dialect.List) returns one current case ID of the list, no row when
	// none is current.
	TakenCase string
	// RetireCase ($1 version removed, $2 tenant, $3 dataset ID, $4 case
	// ID) marks a current case removed and returns its position.
	RetireCase string
	// DatasetCases ($1 tenant, $2 dataset ID, $3 version) returns case ID,
	// data, version added and creation time of the cases as of a version,
	// in order.
	DatasetCases string

	// GetExperiment ($1 tenant, $2 ID) returns an experiment's columns
	// (see scanExperiment).
	GetExperiment string
	// InsertExperiment ($1 tenant, $2 ID, $3 name, $4 dataset ID, $5
	// dataset version, $6 assistant ID, $7 repetitions, $8 concurrency, $9
	// baseline ID, $10 metadata, $11 status, $12 total, $13 now, $14
	// assistant version, $15 criteria or NULL).
	InsertExperiment string
	// SearchExperiments ($1 tenant, $2 dataset ID or "", $3 assistant ID or
	// "", $4 limit, $5 offset), newest first.
	SearchExperiments string
	// UpdateExperiment ($1 status, $2 summary or NULL to keep, $3 error or
	// "" to keep, $4 now, $5 tenant, $6 ID) changes a live experiment.
	UpdateExperiment string
	// InsertExperimentResult ($1 tenant, $2 experiment ID, $3 case ID, $4
	// repetition, $5 passed, $6 data, $7 now) stores a result unless one is
	// there.
	InsertExperimentResult string
	// ExperimentResults ($1 tenant, $2 experiment ID) returns case ID,
	// repetition, passed, data and creation time, by case and repetition.
	ExperimentResults string
	// ExperimentProgress ($1 tenant, $2 experiment ID) returns how many
	// results there are and how many passed.
	ExperimentProgress string

	// GetAssistant ($1 tenant, $2 ID) returns an assistant's columns (see
	// scanAssistant).
	GetAssistant string
	// GetAssistantForUpdate is GetAssistant locking the row where the
	// dialect needs it.
	GetAssistantForUpdate string
	// InsertAssistant ($1 tenant, $2 ID, $3 graph ID, $4 name, $5
	// description, $6 config, $7 context, $8 metadata, $9 now) stores an
	// assistant at version 1, or nothing when the ID is taken.
	InsertAssistant string
	// InsertAssistantVersion ($1 tenant, $2 ID, $3 version, $4 graph ID, $5
	// name, $6 description, $7 config, $8 context, $9 metadata, $10 now).
	InsertAssistantVersion string
	// NextAssistantVersion ($1 tenant, $2 ID) returns one above the
	// highest version.
	NextAssistantVersion string
	// UpdateAssistant ($1 graph ID, $2 name, $3 description, $4 config, $5
	// context, $6 metadata, $7 version, $8 now, $9 tenant, $10 ID).
	UpdateAssistant string
	// DeleteAssistant ($1 tenant, $2 ID).
	DeleteAssistant string
	// SelectAssistants is the start of a search, to which WHERE, ORDER BY
	// and paging are added: the columns of GetAssistant.
	SelectAssistants string
	// CountAssistants is the start of a count, to which WHERE is added.
	CountAssistants string
	// SelectAssistantVersions is SelectAssistants over the versions, the
	// version's creation time as both creation and update times.
	SelectAssistantVersions string
	// GetAssistantVersion ($1 tenant, $2 ID, $3 version) returns one
	// version's columns as SelectAssistantVersions does.
	GetAssistantVersion string
	// ResolveAssistant ($1 tenant, $2 an assistant ID or a graph ID)
	// returns the assistant with that ID, else the graph's first
	// assistant (creation order, ties by ID), as GetAssistant does.
	ResolveAssistant string
	// SetLatestVersion ($1 now, $2 tenant, $3 ID, $4 version) copies a
	// version onto the assistant; no row changes when there is no such
	// version.
	SetLatestVersion string

	// GetCron ($1 tenant, $2 ID) returns a cron's columns (see scanCron).
	GetCron string
	// GetCronForUpdate is GetCron locking the row where the dialect needs
	// it.
	GetCronForUpdate string
	// ThreadExists ($1 tenant, $2 thread ID) returns a row when the thread
	// exists.
	ThreadExists string
	// InsertCron ($1 tenant, $2 ID, $3 assistant ID, $4 thread ID or NULL,
	// $5 user ID, $6 schedule, $7 timezone, $8 payload, $9 metadata, $10
	// next run or NULL, $11 end time or NULL, $12 enabled, $13
	// on-run-completed, $14 now) returns the stored cron's columns.
	InsertCron string
	// UpdateCron ($1 schedule, $2 timezone, $3 payload, $4 metadata, $5
	// next run or NULL, $6 end time or NULL, $7 enabled, $8
	// on-run-completed, $9 now, $10 tenant, $11 ID) returns the cron's
	// columns.
	UpdateCron string
	// DeleteCron ($1 tenant, $2 ID).
	DeleteCron string
	// SelectCrons is the start of a search: the columns of GetCron.
	SelectCrons string
	// CountCrons is the start of a count.
	CountCrons string
	// DueCrons ($1 now, $2 limit) returns the tenant then a cron's columns
	// of every enabled cron whose next run has come, by next run, tenant
	// and ID.
	DueCrons string
	// AdvanceCron ($1 next run or NULL, $2 now, $3 tenant, $4 ID, $5 slot)
	// moves an enabled cron's next run from slot.
	AdvanceCron string

	// InsertKey ($1 ID, $2 tenant, $3 name, $4 prefix, $5 hash, $6
	// creation time).
	InsertKey string
	// KeyByHash ($1 hash) returns a key's columns (see scanKey).
	KeyByHash string
	// ListKeys ($1 tenant, "" for all) returns keys' columns by creation
	// time and ID.
	ListKeys string
	// RevokeKey ($1 ID, $2 time) sets the revocation time unless set and
	// returns the key's columns.
	RevokeKey string
	// TouchKey ($1 ID, $2 time) sets the last use.
	TouchKey string
	// CountActiveKeys counts the keys not revoked.
	CountActiveKeys string

	// GetThread ($1 tenant, $2 ID) returns a thread's columns (see
	// scanThread).
	GetThread string
	// GetThreadForRun ($1 tenant, $2 ID) is GetThread followed by the
	// assistant ID and version (NULL: none) of the thread's newest run
	// (NULL, NULL without runs) and whether a run of it is pending or
	// running.
	GetThreadForRun string
	// InsertThread ($1 tenant, $2 ID, $3 status, $4 metadata, $5 values or
	// NULL, $6 interrupts, $7 error, $8 now, $9 TTL in microseconds or
	// NULL, $10 TTL strategy, $11 expiry or NULL) stores a thread, or
	// nothing when the ID is taken.
	InsertThread string
	// CreateThread is InsertThread returning the thread's columns (those
	// of GetThread) as stored: no row when the ID is taken.
	CreateThread string
	// UpdateThreadMetadata ($1 metadata patch, or the merged document when
	// the dialect does not merge in SQL, $2 now, $3 tenant, $4 ID) also
	// moves the expiry to the TTL after now.
	UpdateThreadMetadata string
	// TagThread ($1 graph ID, $2 assistant ID, $3 now, $4 tenant, $5 ID)
	// sets the metadata keys graph_id and assistant_id, keeping the
	// others, and moves updated_at and the expiry as UpdateThreadMetadata
	// does.
	TagThread string
	// SetThreadResult ($1 status, $2 error, $3 whether to set the values,
	// $4 values, $5 interrupts or NULL to keep, $6 now, $7 tenant, $8 ID,
	// $9 title or '') also moves the expiry to the TTL after now, sets
	// the metadata key title to $9 unless it is '' or the key is set, and
	// returns the thread's columns (those of GetThread).
	SetThreadResult string
	// SetThreadResultPending is SetThreadResult for a run's finish where
	// EndRunWithResult is missing (optional): the same arguments and
	// columns, then PendingAfter's two as of $6, read where no run of the
	// thread can be accepted before the commit.
	SetThreadResultPending string `sql:"optional"`
	// DeleteThread ($1 tenant, $2 ID).
	DeleteThread string
	// SelectThreads is the start of a search: the columns of GetThread.
	SelectThreads string
	// CountThreads is the start of a count.
	CountThreads string
	// CopyThread ($1 new ID, $2 now, $3 tenant, $4 ID) copies a thread row
	// created now, its expiry the TTL after now; nothing when the new ID is
	// taken.
	CopyThread string
	// CopyCheckpointMetadata ($1 new thread ID, $2 tenant, $3 thread ID).
	CopyCheckpointMetadata string
	// SetThreadTTL ($1 TTL in microseconds or NULL, $2 strategy, $3 now,
	// $4 expiry or NULL, $5 tenant, $6 ID).
	SetThreadTTL string
	// ExpiredThreads ($1 now, $2 limit) returns tenant, ID and TTL strategy
	// of idle threads expired at now, the longest expired first.
	ExpiredThreads string
	// ExpiredThread ($1 now, $2 tenant, $3 ID) returns the TTL strategy of
	// the thread if it is expired and idle at now, locking it where the
	// dialect needs it.
	ExpiredThread string
	// KeepExpiredThread ($1 tenant, $2 ID) clears a thread's expiry.
	KeepExpiredThread string

	// GetCheckpointMetadata ($1 tenant, $2 thread ID, $3 checkpoint ID)
	// returns a checkpoint's metadata overlay.
	GetCheckpointMetadata string
	// PatchCheckpointMetadata ($1 tenant, $2 thread ID, $3 checkpoint ID,
	// $4 metadata patch, or the merged document when the dialect does not
	// merge in SQL, $5 now) stores the overlay and returns it.
	PatchCheckpointMetadata string
	// CheckpointMetadata ($1 tenant, $2 thread ID) returns checkpoint ID
	// and overlay of each of the thread's overlays.
	CheckpointMetadata string

	// ReadEvents ($1 tenant, $2 run ID, $3 after Seq, $4 limit or NULL for
	// all) returns Seq, name, data and creation time, by Seq.
	ReadEvents string
	// DeleteEvents ($1 tenant, $2 run ID).
	DeleteEvents string
	// PruneEvents ($1 time) deletes the events of runs that ended before.
	PruneEvents string

	// RunExists ($1 tenant, $2 run ID, $3 thread ID or "") returns a row
	// when the run exists.
	RunExists string
	// RunExistsForUpdate is RunExists locking the run until the
	// transaction ends where the dialect needs it, so concurrent creations
	// of feedback count in turn.
	RunExistsForUpdate string
	// CountFeedback ($1 tenant, $2 run ID).
	CountFeedback string
	// InsertFeedback ($1 tenant, $2 ID, $3 thread ID, $4 run ID, $5 key, $6
	// score, $7 value, $8 comment, $9 correction, $10 message ID, $11 now)
	// returns the stored feedback's columns (see scanFeedback).
	InsertFeedback string
	// ListFeedback ($1 tenant, $2 run ID), oldest first.
	ListFeedback string
	// DeleteFeedback ($1 tenant, $2 thread ID, $3 run ID, $4 feedback ID).
	DeleteFeedback string

	runQueries
}

// statement is one statement field of Queries.
type statement struct {
	name     string
	optional bool // tagged `sql:"optional"`: a dialect may give no text
	v        reflect.Value
}

// statements lists Queries' statement fields in order, those of embedded
// groups in their place.
func (q *Queries) statements() []statement {
	var out []statement
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := range v.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(v.Field(i))
				continue
			}
			if f.IsExported() && f.Type.Kind() == reflect.String {
				out = append(out, statement{f.Name, f.Tag.Get("sql") == "optional", v.Field(i)})
			}
		}
	}
	walk(reflect.ValueOf(q).Elem())
	return out
}

// All yields each statement's name and text, in the order of Queries'
// fields; an optional statement the dialect left out is skipped.
func (q *Queries) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, st := range q.statements() {
			if st.optional && st.v.String() == "" {
				continue
			}
			if !yield(st.name, st.v.String()) {
				return
			}
		}
	}
}

// Names lists every statement's name, optional ones included.
func (q *Queries) Names() []string {
	var out []string
	for _, st := range q.statements() {
		out = append(out, st.name)
	}
	return out
}

// Check reports the first statement q lacks.
func (q *Queries) Check() error {
	for _, st := range q.statements() {
		if !st.optional && strings.TrimSpace(st.v.String()) == "" {
			return fmt.Errorf("query %s is missing from the dialect's query files", st.name)
		}
	}
	return nil
}

// Pattern is where a backend keeps its query files, relative to its
// package directory (embedded).
const Pattern = "queries/*.sql"

// PrepareAll loads the query files as Load does, checks that none is
// missing, and calls prepare with each statement; the error names every
// statement prepare refused.
func PrepareAll(fsys fs.FS, pattern string, prepare func(text string) error) error {
	q, err := Load(fsys, pattern)
	if err != nil {
		return err
	}
	if err := q.Check(); err != nil {
		return err
	}
	var errs []error
	for name, text := range q.All() {
		if err := prepare(text); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w\n%s", name, err, text))
		}
	}
	return errors.Join(errs...)
}

// Load reads the statements of the .sql files in fsys matching pattern.
// A statement starts at a line "-- name: Field", Field naming a field of
// Queries, and runs to the next such line; other comment lines are kept
// as written. A name that is not a field, or one given twice, is an error.
func Load(fsys fs.FS, pattern string) (*Queries, error) {
	files, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("query files %q: %w", pattern, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no query files match %q", pattern)
	}
	q := &Queries{}
	fields := map[string]reflect.Value{}
	for _, st := range q.statements() {
		fields[st.name] = st.v
	}
	seen := map[string]string{}
	for _, name := range files {
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("query file %s: %w", name, err)
		}
		var field reflect.Value
		var body strings.Builder
		flush := func() {
			if field.IsValid() {
				field.SetString(strings.TrimSpace(body.String()))
			}
			body.Reset()
		}
		sc := bufio.NewScanner(strings.NewReader(string(text)))
		for line := 1; sc.Scan(); line++ {
			l := sc.Text()
			key, ok := strings.CutPrefix(strings.TrimSpace(l), "-- name:")
			if !ok {
				if field.IsValid() {
					body.WriteString(l)
					body.WriteByte('\n')
				}
				continue
			}
			flush()
			key = strings.TrimSpace(key)
			f, known := fields[key]
			if !known {
				return nil, fmt.Errorf("query file %s:%d: %q is not a statement of sqlcore.Queries", name, line, key)
			}
			if prev, dup := seen[key]; dup {
				return nil, fmt.Errorf("query file %s:%d: %s is given again (first in %s)", name, line, key, prev)
			}
			seen[key] = name
			field = f
		}
		flush()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("query file %s: %w", name, err)
		}
	}
	return q, nil
}
