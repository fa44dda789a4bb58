package sqlite

// experimentsSchema is the evaluation tables' second step: experiments
// and their units' results, one row per (experiment, case, repetition) so
// a unit is recorded once whatever retries it.
const experimentsSchema = `
CREATE TABLE trellis_experiments (
	tenant          TEXT    NOT NULL,
	experiment_id   TEXT    NOT NULL,
	name            TEXT    NOT NULL,
	dataset_id      TEXT    NOT NULL,
	dataset_version INTEGER NOT NULL,
	assistant_id    TEXT    NOT NULL,
	repetitions     INTEGER NOT NULL,
	concurrency     INTEGER NOT NULL,
	baseline_id     TEXT    NOT NULL,
	metadata        BLOB    NOT NULL,
	status          TEXT    NOT NULL,
	total           INTEGER NOT NULL,
	summary         BLOB,
	error           TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	PRIMARY KEY (tenant, experiment_id),
	FOREIGN KEY (tenant, dataset_id) REFERENCES trellis_datasets (tenant, dataset_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX trellis_experiments_created ON trellis_experiments (tenant, created_at);

CREATE TABLE trellis_experiment_results (
	tenant        TEXT    NOT NULL,
	experiment_id TEXT    NOT NULL,
	case_id       TEXT    NOT NULL,
	repetition    INTEGER NOT NULL,
	passed        INTEGER NOT NULL,
	data          BLOB    NOT NULL,
	created_at    INTEGER NOT NULL,
	PRIMARY KEY (tenant, experiment_id, case_id, repetition),
	FOREIGN KEY (tenant, experiment_id) REFERENCES trellis_experiments (tenant, experiment_id) ON DELETE CASCADE
) WITHOUT ROWID;
`
