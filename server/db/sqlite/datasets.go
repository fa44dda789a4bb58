package sqlite

import (
	"github.com/trellis-agents/trellis/internal/sqlitedb"
)

// EvalComponent names the evaluation tables (datasets, their cases, run
// feedback) in schema_migrations: versioned apart from the other tables.
const EvalComponent = "server_eval"

// evalMigrations is the evaluation tables' schema, oldest first.
//
// A case row is one content of a case: version_added is the dataset
// version that wrote it, version_removed the version that removed or
// replaced it (NULL while current), so the cases as of version v are the
// rows with version_added <= v and (version_removed IS NULL or
// version_removed > v). position orders cases by first addition and is
// kept by edits.
var evalMigrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE trellis_datasets (
	tenant      TEXT    NOT NULL,
	dataset_id  TEXT    NOT NULL,
	name        TEXT    NOT NULL,
	description TEXT    NOT NULL,
	metadata    BLOB    NOT NULL,
	criteria    BLOB    NOT NULL,
	version     INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	PRIMARY KEY (tenant, dataset_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX trellis_datasets_name ON trellis_datasets (tenant, name);

CREATE TABLE trellis_dataset_cases (
	tenant          TEXT    NOT NULL,
	dataset_id      TEXT    NOT NULL,
	case_id         TEXT    NOT NULL,
	version_added   INTEGER NOT NULL,
	version_removed INTEGER,
	position        INTEGER NOT NULL,
	data            BLOB    NOT NULL,
	created_at      INTEGER NOT NULL,
	PRIMARY KEY (tenant, dataset_id, case_id, version_added),
	FOREIGN KEY (tenant, dataset_id) REFERENCES trellis_datasets (tenant, dataset_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX trellis_dataset_cases_order ON trellis_dataset_cases (tenant, dataset_id, position);

CREATE TABLE trellis_run_feedback (
	tenant      TEXT    NOT NULL,
	feedback_id TEXT    NOT NULL,
	thread_id   TEXT    NOT NULL,
	run_id      TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	score       BLOB,
	value       BLOB,
	comment     TEXT    NOT NULL,
	correction  BLOB,
	message_id  TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (tenant, feedback_id),
	FOREIGN KEY (tenant, run_id) REFERENCES trellis_runs (tenant, run_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX trellis_run_feedback_run ON trellis_run_feedback (tenant, run_id, created_at);
`}, {Version: 2, SQL: experimentsSchema}, {Version: 3, SQL: feedbackSourceSchema},
	{Version: 4, SQL: experimentAssistantVersionSchema}, {Version: 5, SQL: experimentCriteriaSchema}}

// feedbackSourceSchema gives feedback a source column. Entries stored
// before it are the API's, except the online evaluators', which said so
// inside their value.
const feedbackSourceSchema = `
ALTER TABLE trellis_run_feedback ADD COLUMN source TEXT NOT NULL DEFAULT 'api';
UPDATE trellis_run_feedback SET source = 'evaluator'
	WHERE value IS NOT NULL AND json_valid(CAST(value AS TEXT)) AND json_extract(CAST(value AS TEXT), '$.source') = 'evaluator';
`

// experimentAssistantVersionSchema records the assistant version an
// experiment pinned (0: it runs the assistant's latest version).
const experimentAssistantVersionSchema = `
ALTER TABLE trellis_experiments ADD COLUMN assistant_version INTEGER NOT NULL DEFAULT 0;
`

// experimentCriteriaSchema keeps the dataset criteria an experiment was
// created with (NULL for experiments stored before: they read the
// dataset's).
const experimentCriteriaSchema = `
ALTER TABLE trellis_experiments ADD COLUMN criteria BLOB;
`
