package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

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

const experimentCols = `experiment_id, name, dataset_id, dataset_version, assistant_id, repetitions, concurrency, baseline_id,
	metadata, status, total, summary, error, created_at, updated_at`

func scanExperiment(s scanner, tenant string) (db.Experiment, error) {
	var e db.Experiment
	var md, summary []byte
	var created, updated int64
	if err := s.Scan(&e.ID, &e.Name, &e.DatasetID, &e.DatasetVersion, &e.AssistantID, &e.Repetitions, &e.Concurrency, &e.BaselineID,
		&md, &e.Status, &e.Total, &summary, &e.Error, &created, &updated); err != nil {
		return db.Experiment{}, err
	}
	if len(summary) > 0 {
		e.Summary = summary
	}
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
	var err error
	if e.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Experiment{}, wrap(err, "experiment %q of tenant %q", e.ID, tenant)
	}
	return e, nil
}

func getExperiment(ctx context.Context, q querier, tenant, id string) (db.Experiment, error) {
	e, err := scanExperiment(q.QueryRowContext(ctx, `SELECT `+experimentCols+` FROM trellis_experiments WHERE tenant = ? AND experiment_id = ?`, tenant, id), tenant)
	if errors.Is(err, sql.ErrNoRows) {
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
	err = d.write(ctx, func(tx *sql.Tx) error {
		if _, err := getDataset(ctx, tx, tenant, e.DatasetID); err != nil {
			return err
		}
		now := micros(dbutil.Now())
		_, err := tx.ExecContext(ctx, `INSERT INTO trellis_experiments (tenant, `+experimentCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '', ?, ?)`, tenant, e.ID, e.Name, e.DatasetID, e.DatasetVersion, e.AssistantID,
			e.Repetitions, e.Concurrency, e.BaselineID, md, db.ExperimentPending, e.Total, now, now)
		if isUnique(err) {
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
	return getExperiment(ctx, d.sq.Read, tenant, id)
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
	rows, err := d.sq.Read.QueryContext(ctx, `SELECT `+experimentCols+` FROM trellis_experiments
		WHERE tenant = ? AND (? = '' OR dataset_id = ?) AND (? = '' OR assistant_id = ?)
		ORDER BY created_at DESC, experiment_id DESC LIMIT ? OFFSET ?`,
		tenant, q.DatasetID, q.DatasetID, q.AssistantID, q.AssistantID, limit, offset)
	if err != nil {
		return nil, wrap(err, "search experiments")
	}
	defer rows.Close()
	out := []db.Experiment{}
	for rows.Next() {
		e, err := scanExperiment(rows, tenant)
		if err != nil {
			return nil, wrap(err, "search experiments")
		}
		out = append(out, e)
	}
	return out, wrap(rows.Err(), "search experiments")
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
	err := d.write(ctx, func(tx *sql.Tx) error {
		var summary any
		if len(u.Summary) > 0 {
			summary = []byte(u.Summary)
		}
		res, err := tx.ExecContext(ctx, `UPDATE trellis_experiments SET status = ?, summary = COALESCE(?, summary),
			error = CASE WHEN ? = '' THEN error ELSE ? END, updated_at = ?
			WHERE tenant = ? AND experiment_id = ? AND status IN ('pending', 'running')`,
			u.Status, summary, u.Error, u.Error, micros(dbutil.Now()), tenant, id)
		if err != nil {
			return wrap(err, "update experiment %q", id)
		}
		n, _ := res.RowsAffected()
		changed = n > 0
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
	err := d.write(ctx, func(tx *sql.Tx) error {
		if _, err := getExperiment(ctx, tx, tenant, r.ExperimentID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO trellis_experiment_results (tenant, experiment_id, case_id, repetition, passed, data, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, tenant, r.ExperimentID, r.CaseID, r.Repetition, r.Passed, []byte(r.Data), micros(dbutil.Now()))
		if err != nil {
			return wrap(err, "record case %q of experiment %q", r.CaseID, r.ExperimentID)
		}
		n, _ := res.RowsAffected()
		inserted = n > 0
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
	err := d.read(ctx, func(tx *sql.Tx) error {
		if _, err := getExperiment(ctx, tx, tenant, id); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT case_id, repetition, passed, data, created_at FROM trellis_experiment_results
			WHERE tenant = ? AND experiment_id = ? ORDER BY case_id, repetition`, tenant, id)
		if err != nil {
			return wrap(err, "read results of experiment %q", id)
		}
		defer rows.Close()
		for rows.Next() {
			r := db.ExperimentResult{ExperimentID: id}
			var data []byte
			var created int64
			if err := rows.Scan(&r.CaseID, &r.Repetition, &r.Passed, &data, &created); err != nil {
				return wrap(err, "read results of experiment %q", id)
			}
			r.Data, r.CreatedAt = data, fromMicros(created)
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
	err := d.read(ctx, func(tx *sql.Tx) error {
		if _, err := getExperiment(ctx, tx, tenant, id); err != nil {
			return err
		}
		return wrap(tx.QueryRowContext(ctx, `SELECT count(*), COALESCE(SUM(passed), 0) FROM trellis_experiment_results
			WHERE tenant = ? AND experiment_id = ?`, tenant, id).Scan(&p.Done, &p.Passed), "count results of experiment %q", id)
	})
	return p, err
}
