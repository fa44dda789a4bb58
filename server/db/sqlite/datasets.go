package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
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
`}, {Version: 2, SQL: experimentsSchema}, {Version: 3, SQL: feedbackSourceSchema}}

// feedbackSourceSchema gives feedback a source column. Entries stored
// before it are the API's, except the online evaluators', which said so
// inside their value.
const feedbackSourceSchema = `
ALTER TABLE trellis_run_feedback ADD COLUMN source TEXT NOT NULL DEFAULT 'api';
UPDATE trellis_run_feedback SET source = 'evaluator'
	WHERE value IS NOT NULL AND json_valid(CAST(value AS TEXT)) AND json_extract(CAST(value AS TEXT), '$.source') = 'evaluator';
`

const datasetCols = `dataset_id, name, description, metadata, criteria, version, created_at, updated_at,
	(SELECT count(*) FROM trellis_dataset_cases c WHERE c.tenant = trellis_datasets.tenant AND c.dataset_id = trellis_datasets.dataset_id AND c.version_removed IS NULL)`

func scanDataset(s scanner, tenant string) (db.Dataset, error) {
	var d db.Dataset
	var md, crit []byte
	var created, updated int64
	if err := s.Scan(&d.ID, &d.Name, &d.Description, &md, &crit, &d.Version, &created, &updated, &d.Cases); err != nil {
		return db.Dataset{}, err
	}
	d.Criteria = crit
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	var err error
	if d.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Dataset{}, wrap(err, "dataset %q of tenant %q", d.ID, tenant)
	}
	return d, nil
}

func getDataset(ctx context.Context, q querier, tenant, id string) (db.Dataset, error) {
	d, err := scanDataset(q.QueryRowContext(ctx, `SELECT `+datasetCols+` FROM trellis_datasets WHERE tenant = ? AND dataset_id = ?`, tenant, id), tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return db.Dataset{}, notFound("dataset", id, tenant)
	}
	if err != nil {
		return db.Dataset{}, wrap(err, "get dataset %q", id)
	}
	return d, nil
}

// CreateDataset stores a dataset at version 1 with its cases.
func (d *DB) CreateDataset(ctx context.Context, tenant string, ds db.Dataset, cases []db.DatasetCase) (db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Dataset{}, err
	}
	md, crit, err := dbutil.Dataset(ds)
	if err != nil {
		return db.Dataset{}, err
	}
	if err := dbutil.Cases(cases); err != nil {
		return db.Dataset{}, err
	}
	if len(cases) > db.MaxDatasetCases {
		return db.Dataset{}, dbutil.Invalid("a dataset holds at most %d cases", db.MaxDatasetCases)
	}
	if ds.ID == "" {
		ds.ID = dbutil.NewID()
	}
	var out db.Dataset
	err = d.write(ctx, func(tx *sql.Tx) error {
		now := micros(dbutil.Now())
		_, err := tx.ExecContext(ctx, `INSERT INTO trellis_datasets (tenant, dataset_id, name, description, metadata, criteria, version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)`, tenant, ds.ID, ds.Name, ds.Description, md, crit, now, now)
		if isUnique(err) {
			return wrap(db.ErrConflict, "dataset %q or a dataset named %q", ds.ID, ds.Name)
		}
		if err != nil {
			return wrap(err, "create dataset %q", ds.ID)
		}
		if err := insertCases(ctx, tx, tenant, ds.ID, 1, cases, now); err != nil {
			return err
		}
		out, err = getDataset(ctx, tx, tenant, ds.ID)
		return err
	})
	return out, err
}

// insertCases inserts cases as added at version, after the dataset's
// last position.
func insertCases(ctx context.Context, tx *sql.Tx, tenant, id string, version int, cases []db.DatasetCase, now int64) error {
	var pos int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM trellis_dataset_cases WHERE tenant = ? AND dataset_id = ?`, tenant, id).Scan(&pos); err != nil {
		return wrap(err, "add cases to dataset %q", id)
	}
	for _, c := range cases {
		pos++
		if _, err := tx.ExecContext(ctx, `INSERT INTO trellis_dataset_cases (tenant, dataset_id, case_id, version_added, position, data, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, tenant, id, c.ID, version, pos, []byte(c.Data), now); err != nil {
			return wrap(err, "add case %q to dataset %q", c.ID, id)
		}
	}
	return nil
}

// GetDataset returns a dataset.
func (d *DB) GetDataset(ctx context.Context, tenant, id string) (db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Dataset{}, err
	}
	return getDataset(ctx, d.sq.Read, tenant, id)
}

// UpdateDataset applies p to a dataset.
func (d *DB) UpdateDataset(ctx context.Context, tenant, id string, p db.DatasetPatch) (db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Dataset{}, err
	}
	var out db.Dataset
	err := d.write(ctx, func(tx *sql.Tx) error {
		ds, err := getDataset(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		applyDatasetPatch(&ds, p)
		md, crit, err := dbutil.Dataset(ds)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE trellis_datasets SET name = ?, description = ?, metadata = ?, criteria = ?, updated_at = ?
			WHERE tenant = ? AND dataset_id = ?`, ds.Name, ds.Description, md, crit, micros(dbutil.Now()), tenant, id)
		if isUnique(err) {
			return wrap(db.ErrConflict, "a dataset named %q", ds.Name)
		}
		if err != nil {
			return wrap(err, "update dataset %q", id)
		}
		out, err = getDataset(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

func applyDatasetPatch(ds *db.Dataset, p db.DatasetPatch) {
	if p.Name != nil {
		ds.Name = *p.Name
	}
	if p.Description != nil {
		ds.Description = *p.Description
	}
	if p.Metadata != nil {
		ds.Metadata = dbutil.Merge(ds.Metadata, p.Metadata)
	}
	if len(p.Criteria) > 0 {
		ds.Criteria = p.Criteria
	}
}

// DeleteDataset deletes a dataset with its cases.
func (d *DB) DeleteDataset(ctx context.Context, tenant, id string) error {
	if err := dbutil.Tenant(tenant); err != nil {
		return err
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM trellis_datasets WHERE tenant = ? AND dataset_id = ?`, tenant, id)
		if err != nil {
			return wrap(err, "delete dataset %q", id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("dataset", id, tenant)
		}
		return nil
	})
}

// SearchDatasets lists the tenant's datasets, newest first.
func (d *DB) SearchDatasets(ctx context.Context, tenant string, q db.DatasetQuery) ([]db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	rows, err := d.sq.Read.QueryContext(ctx, `SELECT `+datasetCols+` FROM trellis_datasets
		WHERE tenant = ? AND instr(lower(name), lower(?)) > 0 ORDER BY created_at DESC, dataset_id DESC LIMIT ? OFFSET ?`,
		tenant, q.Name, limit, offset)
	if err != nil {
		return nil, wrap(err, "search datasets")
	}
	defer rows.Close()
	out := []db.Dataset{}
	for rows.Next() {
		ds, err := scanDataset(rows, tenant)
		if err != nil {
			return nil, wrap(err, "search datasets")
		}
		out = append(out, ds)
	}
	return out, wrap(rows.Err(), "search datasets")
}

// changeCases runs fn on a dataset in a write transaction with the next
// version, then records that version.
func (d *DB) changeCases(ctx context.Context, tenant, id string, fn func(tx *sql.Tx, ds db.Dataset, next int, now int64) error) (db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Dataset{}, err
	}
	var out db.Dataset
	err := d.write(ctx, func(tx *sql.Tx) error {
		ds, err := getDataset(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		now := micros(dbutil.Now())
		if err := fn(tx, ds, ds.Version+1, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE trellis_datasets SET version = ?, updated_at = ? WHERE tenant = ? AND dataset_id = ?`,
			ds.Version+1, now, tenant, id); err != nil {
			return wrap(err, "update dataset %q", id)
		}
		out, err = getDataset(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// AddCases adds cases in a new version.
func (d *DB) AddCases(ctx context.Context, tenant, id string, cases []db.DatasetCase) (db.Dataset, error) {
	if err := dbutil.Cases(cases); err != nil {
		return db.Dataset{}, err
	}
	return d.changeCases(ctx, tenant, id, func(tx *sql.Tx, ds db.Dataset, next int, now int64) error {
		if ds.Cases+len(cases) > db.MaxDatasetCases {
			return dbutil.Invalid("dataset %q would hold %d cases, more than %d", id, ds.Cases+len(cases), db.MaxDatasetCases)
		}
		for _, c := range cases {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM trellis_dataset_cases WHERE tenant = ? AND dataset_id = ? AND case_id = ? AND version_removed IS NULL`,
				tenant, id, c.ID).Scan(&n); err != nil {
				return wrap(err, "add cases to dataset %q", id)
			}
			if n > 0 {
				return fmt.Errorf("server/db/sqlite: dataset %q has a case %q already: %w", id, c.ID, db.ErrConflict)
			}
		}
		return insertCases(ctx, tx, tenant, id, next, cases, now)
	})
}

// retire marks the current row of a case as removed at version, keeping
// its position; ErrNotFound when the case is not current.
func retire(ctx context.Context, tx *sql.Tx, tenant, id, caseID string, version int) (int64, error) {
	var pos int64
	err := tx.QueryRowContext(ctx, `UPDATE trellis_dataset_cases SET version_removed = ?
		WHERE tenant = ? AND dataset_id = ? AND case_id = ? AND version_removed IS NULL RETURNING position`,
		version, tenant, id, caseID).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("server/db/sqlite: case %q of dataset %q (tenant %q): %w", caseID, id, tenant, db.ErrNotFound)
	}
	return pos, wrap(err, "change case %q of dataset %q", caseID, id)
}

// ReplaceCase replaces a current case's content in a new version.
func (d *DB) ReplaceCase(ctx context.Context, tenant, id string, c db.DatasetCase) (db.Dataset, error) {
	if err := dbutil.Cases([]db.DatasetCase{c}); err != nil {
		return db.Dataset{}, err
	}
	return d.changeCases(ctx, tenant, id, func(tx *sql.Tx, _ db.Dataset, next int, now int64) error {
		pos, err := retire(ctx, tx, tenant, id, c.ID, next)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO trellis_dataset_cases (tenant, dataset_id, case_id, version_added, position, data, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, tenant, id, c.ID, next, pos, []byte(c.Data), now)
		return wrap(err, "replace case %q of dataset %q", c.ID, id)
	})
}

// RemoveCase removes a current case in a new version.
func (d *DB) RemoveCase(ctx context.Context, tenant, id, caseID string) (db.Dataset, error) {
	return d.changeCases(ctx, tenant, id, func(tx *sql.Tx, _ db.Dataset, next int, _ int64) error {
		_, err := retire(ctx, tx, tenant, id, caseID, next)
		return err
	})
}

// DatasetCases returns the cases as of a version.
func (d *DB) DatasetCases(ctx context.Context, tenant, id string, version int) ([]db.DatasetCase, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	if version < 0 {
		return nil, dbutil.Invalid("version %d is negative", version)
	}
	out := []db.DatasetCase{}
	err := d.read(ctx, func(tx *sql.Tx) error {
		ds, err := getDataset(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		if version == 0 {
			version = ds.Version
		}
		if version > ds.Version {
			return fmt.Errorf("server/db/sqlite: dataset %q has no version %d (latest %d): %w", id, version, ds.Version, db.ErrNotFound)
		}
		rows, err := tx.QueryContext(ctx, `SELECT case_id, data, version_added, created_at FROM trellis_dataset_cases
			WHERE tenant = ? AND dataset_id = ? AND version_added <= ? AND (version_removed IS NULL OR version_removed > ?)
			ORDER BY position`, tenant, id, version, version)
		if err != nil {
			return wrap(err, "read cases of dataset %q", id)
		}
		defer rows.Close()
		for rows.Next() {
			var c db.DatasetCase
			var data []byte
			var created int64
			if err := rows.Scan(&c.ID, &data, &c.Version, &created); err != nil {
				return wrap(err, "read cases of dataset %q", id)
			}
			c.Data, c.CreatedAt = data, fromMicros(created)
			out = append(out, c)
		}
		return wrap(rows.Err(), "read cases of dataset %q", id)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
