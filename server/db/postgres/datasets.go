package postgres

// EvalComponent names the evaluation tables (datasets, their cases, run
// feedback) in schema_migrations: versioned apart from the other tables.
const EvalComponent = "server_eval"

// evalMigrations is the evaluation tables' schema; see pgdb.Migrate. A
// case row is one content of a case, live from version_added until
// version_removed (NULL while current); see the SQLite store's comment.
var evalMigrations = []string{
	// 1: datasets, their cases, run feedback.
	`
CREATE TABLE trellis_datasets (
	tenant      text COLLATE "C" NOT NULL,
	dataset_id  text COLLATE "C" NOT NULL,
	name        text COLLATE "C" NOT NULL,
	description text             NOT NULL,
	metadata    jsonb            NOT NULL,
	criteria    jsonb            NOT NULL,
	version     integer          NOT NULL,
	created_at  timestamptz      NOT NULL,
	updated_at  timestamptz      NOT NULL,
	PRIMARY KEY (tenant, dataset_id)
);
CREATE UNIQUE INDEX trellis_datasets_name ON trellis_datasets (tenant, name);

CREATE TABLE trellis_dataset_cases (
	tenant          text COLLATE "C" NOT NULL,
	dataset_id      text COLLATE "C" NOT NULL,
	case_id         text COLLATE "C" NOT NULL,
	version_added   integer          NOT NULL,
	version_removed integer,
	position        bigint           NOT NULL,
	data            jsonb            NOT NULL,
	created_at      timestamptz      NOT NULL,
	PRIMARY KEY (tenant, dataset_id, case_id, version_added),
	FOREIGN KEY (tenant, dataset_id) REFERENCES trellis_datasets (tenant, dataset_id) ON DELETE CASCADE
);
CREATE INDEX trellis_dataset_cases_order ON trellis_dataset_cases (tenant, dataset_id, position);

CREATE TABLE trellis_run_feedback (
	tenant      text COLLATE "C" NOT NULL,
	feedback_id text COLLATE "C" NOT NULL,
	thread_id   text COLLATE "C" NOT NULL,
	run_id      text COLLATE "C" NOT NULL,
	key         text             NOT NULL,
	score       jsonb,
	value       jsonb,
	comment     text             NOT NULL,
	correction  jsonb,
	message_id  text             NOT NULL,
	created_at  timestamptz      NOT NULL,
	PRIMARY KEY (tenant, feedback_id),
	FOREIGN KEY (tenant, run_id) REFERENCES trellis_runs (tenant, run_id) ON DELETE CASCADE
);
CREATE INDEX trellis_run_feedback_run ON trellis_run_feedback (tenant, run_id, created_at);
`,
	// 2: experiments and their units' results.
	experimentsSchema,
	// 3: feedback's source. Entries stored before it are the API's,
	// except the online evaluators', which said so inside their value.
	`ALTER TABLE trellis_run_feedback ADD COLUMN source text NOT NULL DEFAULT 'api';
UPDATE trellis_run_feedback SET source = 'evaluator' WHERE value->>'source' = 'evaluator';`,
	// 4: the assistant version an experiment pinned (0: the latest).
	`ALTER TABLE trellis_experiments ADD COLUMN assistant_version integer NOT NULL DEFAULT 0;`,
	// 5: the dataset criteria an experiment was created with (NULL for
	// experiments stored before: they read the dataset's).
	`ALTER TABLE trellis_experiments ADD COLUMN criteria jsonb;`,
	// 6: no secondary index of the experiments leads with tenant. One that
	// did let the generic plan of a lookup by key (GetExperiment,
	// UpdateExperiment), made on a table never analyzed, scan it on the
	// tenant alone, filtering every experiment of the tenant (the service's
	// migration 6 did the same for the run path's tables). The search's
	// newest-first order still reads the created index backwards.
	`
DROP INDEX trellis_experiments_dataset;
CREATE INDEX trellis_experiments_dataset ON trellis_experiments (dataset_id, tenant);
DROP INDEX trellis_experiments_created;
CREATE INDEX trellis_experiments_created ON trellis_experiments (created_at, tenant);
`,
}
