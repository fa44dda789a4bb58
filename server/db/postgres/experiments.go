package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

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

const experimentCols = `experiment_id, name, dataset_id, dataset_version, assistant_id, repetitions, concurrency, baseline_id,
	metadata::text, status, total, summary::text, error, created_at, updated_at`

func scanExperiment(s scanner, tenant string) (db.Experiment, error) {
	var e db.Experiment
	var md []byte
	var summary *string
	var status string
	if err := s.Scan(&e.ID, &e.Name, &e.DatasetID, &e.DatasetVersion, &e.AssistantID, &e.Repetitions, &e.Concurrency, &e.BaselineID,
		&md, &status, &e.Total, &summary, &e.Error, &e.CreatedAt, &e.UpdatedAt); err != nil {
		return db.Experiment{}, err
	}
	e.Status = db.ExperimentStatus(status)
	if summary != nil {
		e.Summary = []byte(*summary)
	}
	e.CreatedAt, e.UpdatedAt = utc(e.CreatedAt), utc(e.UpdatedAt)
	var err error
	if e.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Experiment{}, wrap(err, "experiment %q of tenant %q", e.ID, tenant)
	}
	return e, nil
}

func getExperiment(ctx context.Context, q querier, tenant, id string) (db.Experiment, error) {
	e, err := scanExperiment(q.QueryRow(ctx, `SELECT `+experimentCols+` FROM trellis_experiments WHERE tenant = $1 AND experiment_id = $2`, tenant, id), tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Experiment{}, notFound("experiment", id, tenant)
	}
	if err != nil {
		return db.Experiment{}, wrap(err, "get experiment %q", id)
	}
	return e, nil
}

// CreateExperiment stores a pending experiment.
func (d *DB) CreateExperiment(ctx context.Context, tenant string, e db.Experiment) (db.Experiment, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Experiment{}, err
	}
	md, err := dbutil.Experiment(e)
	if err != nil {
		return db.Experiment{}, err
	}
	if e.ID == "" {
		e.ID = dbutil.NewID()
	}
	var out db.Experiment
	err = d.write(ctx, func(tx pgx.Tx) error {
		if _, err := getDataset(ctx, tx, tenant, e.DatasetID, false); err != nil {
			return err
		}
		now := dbutil.Now()
		_, err := tx.Exec(ctx, `INSERT INTO trellis_experiments (tenant, experiment_id, name, dataset_id, dataset_version, assistant_id,
			repetitions, concurrency, baseline_id, metadata, status, total, summary, error, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, NULL, '', $13, $13)`, tenant, e.ID, e.Name, e.DatasetID, e.DatasetVersion,
			e.AssistantID, e.Repetitions, e.Concurrency, e.BaselineID, string(md), string(db.ExperimentPending), e.Total, now)
		if isUnique(err, "") {
			return wrap(db.ErrConflict, "experiment %q", e.ID)
		}
		if err != nil {
			return wrap(err, "create experiment %q", e.ID)
		}
		out, err = getExperiment(ctx, tx, tenant, e.ID)
		return err
	})
	return out, err
}

// GetExperiment returns an experiment.
func (d *DB) GetExperiment(ctx context.Context, tenant, id string) (db.Experiment, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Experiment{}, err
	}
	var out db.Experiment
	err := d.read(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = getExperiment(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// SearchExperiments lists experiments, newest first.
func (d *DB) SearchExperiments(ctx context.Context, tenant string, q db.ExperimentQuery) ([]db.Experiment, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	out := []db.Experiment{}
	err = d.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+experimentCols+` FROM trellis_experiments
			WHERE tenant = $1 AND ($2 = '' OR dataset_id = $2) AND ($3 = '' OR assistant_id = $3)
			ORDER BY created_at DESC, experiment_id DESC LIMIT $4 OFFSET $5`, tenant, q.DatasetID, q.AssistantID, limit, offset)
		if err != nil {
			return wrap(err, "search experiments")
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanExperiment(rows, tenant)
			if err != nil {
				return wrap(err, "search experiments")
			}
			out = append(out, e)
		}
		return wrap(rows.Err(), "search experiments")
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateExperiment changes a live experiment's status.
func (d *DB) UpdateExperiment(ctx context.Context, tenant, id string, u db.ExperimentUpdate) (db.Experiment, bool, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Experiment{}, false, err
	}
	if err := dbutil.ExperimentUpdate(u); err != nil {
		return db.Experiment{}, false, err
	}
	var out db.Experiment
	var changed bool
	err := d.write(ctx, func(tx pgx.Tx) error {
		var summary *string
		if len(u.Summary) > 0 {
			s := string(u.Summary)
			summary = &s
		}
		tag, err := tx.Exec(ctx, `UPDATE trellis_experiments SET status = $1, summary = COALESCE($2::jsonb, summary),
			error = CASE WHEN $3 = '' THEN error ELSE $3 END, updated_at = $4
			WHERE tenant = $5 AND experiment_id = $6 AND status IN ('pending', 'running')`,
			string(u.Status), summary, u.Error, dbutil.Now(), tenant, id)
		if err != nil {
			return wrap(err, "update experiment %q", id)
		}
		changed = tag.RowsAffected() > 0
		out, err = getExperiment(ctx, tx, tenant, id)
		return err
	})
	return out, changed, err
}

// RecordExperimentResult stores a unit's result once.
func (d *DB) RecordExperimentResult(ctx context.Context, tenant string, r db.ExperimentResult) (bool, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return false, err
	}
	if err := dbutil.ExperimentResult(r); err != nil {
		return false, err
	}
	var inserted bool
	err := d.write(ctx, func(tx pgx.Tx) error {
		if _, err := getExperiment(ctx, tx, tenant, r.ExperimentID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO trellis_experiment_results (tenant, experiment_id, case_id, repetition, passed, data, created_at)
			VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7) ON CONFLICT DO NOTHING`, tenant, r.ExperimentID, r.CaseID, r.Repetition, r.Passed, string(r.Data), dbutil.Now())
		if err != nil {
			return wrap(err, "record case %q of experiment %q", r.CaseID, r.ExperimentID)
		}
		inserted = tag.RowsAffected() > 0
		return nil
	})
	return inserted, err
}

// ExperimentResults lists an experiment's results.
func (d *DB) ExperimentResults(ctx context.Context, tenant, id string) ([]db.ExperimentResult, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	out := []db.ExperimentResult{}
	err := d.read(ctx, func(tx pgx.Tx) error {
		if _, err := getExperiment(ctx, tx, tenant, id); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT case_id, repetition, passed, data::text, created_at FROM trellis_experiment_results
			WHERE tenant = $1 AND experiment_id = $2 ORDER BY case_id, repetition`, tenant, id)
		if err != nil {
			return wrap(err, "read results of experiment %q", id)
		}
		defer rows.Close()
		for rows.Next() {
			r := db.ExperimentResult{ExperimentID: id}
			var data string
			if err := rows.Scan(&r.CaseID, &r.Repetition, &r.Passed, &data, &r.CreatedAt); err != nil {
				return wrap(err, "read results of experiment %q", id)
			}
			r.Data, r.CreatedAt = []byte(data), utc(r.CreatedAt)
			out = append(out, r)
		}
		return wrap(rows.Err(), "read results of experiment %q", id)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExperimentProgress counts an experiment's results.
func (d *DB) ExperimentProgress(ctx context.Context, tenant, id string) (db.ExperimentProgress, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.ExperimentProgress{}, err
	}
	var p db.ExperimentProgress
	err := d.read(ctx, func(tx pgx.Tx) error {
		if _, err := getExperiment(ctx, tx, tenant, id); err != nil {
			return err
		}
		return wrap(tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE passed) FROM trellis_experiment_results
			WHERE tenant = $1 AND experiment_id = $2`, tenant, id).Scan(&p.Done, &p.Passed), "count results of experiment %q", id)
	})
	return p, err
}
