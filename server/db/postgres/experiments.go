package postgres

// experimentsSchema is the evaluation tables' second step: experiments
// and their units' results, one row per (experiment, case, repetition) so
// a unit is recorded once whatever retries it.
const experimentsSchema = `
CREATE TABLE trellis_experiments (
	tenant          text COLLATE "C" NOT NULL,
	experiment_id   text COLLATE "C" NOT NULL,
	name            text             NOT NULL,
	dataset_id      text COLLATE "C" NOT NULL,
	dataset_version integer          NOT NULL,
	assistant_id    text COLLATE "C" NOT NULL,
	repetitions     integer          NOT NULL,
	concurrency     integer          NOT NULL,
	baseline_id     text COLLATE "C" NOT NULL,
	metadata        jsonb            NOT NULL,
	status          text             NOT NULL,
	total           integer          NOT NULL,
	summary         jsonb,
	error           text             NOT NULL,
	created_at      timestamptz      NOT NULL,
	updated_at      timestamptz      NOT NULL,
	PRIMARY KEY (tenant, experiment_id),
	FOREIGN KEY (tenant, dataset_id) REFERENCES trellis_datasets (tenant, dataset_id) ON DELETE CASCADE
);
CREATE INDEX trellis_experiments_created ON trellis_experiments (tenant, created_at);
CREATE INDEX trellis_experiments_dataset ON trellis_experiments (tenant, dataset_id);

CREATE TABLE trellis_experiment_results (
	tenant        text COLLATE "C" NOT NULL,
	experiment_id text COLLATE "C" NOT NULL,
	case_id       text COLLATE "C" NOT NULL,
	repetition    integer          NOT NULL,
	passed        boolean          NOT NULL,
	data          jsonb            NOT NULL,
	created_at    timestamptz      NOT NULL,
	PRIMARY KEY (tenant, experiment_id, case_id, repetition),
	FOREIGN KEY (tenant, experiment_id) REFERENCES trellis_experiments (tenant, experiment_id) ON DELETE CASCADE
);
`
