package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

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
}

const datasetCols = `dataset_id, name, description, metadata::text, criteria::text, version, created_at, updated_at,
	(SELECT count(*) FROM trellis_dataset_cases c WHERE c.tenant = trellis_datasets.tenant AND c.dataset_id = trellis_datasets.dataset_id AND c.version_removed IS NULL)`

func scanDataset(s scanner, tenant string) (db.Dataset, error) {
	var d db.Dataset
	var md, crit []byte
	var n int64
	if err := s.Scan(&d.ID, &d.Name, &d.Description, &md, &crit, &d.Version, &d.CreatedAt, &d.UpdatedAt, &n); err != nil {
		return db.Dataset{}, err
	}
	d.Cases = int(n)
	d.Criteria = crit
	d.CreatedAt, d.UpdatedAt = utc(d.CreatedAt), utc(d.UpdatedAt)
	var err error
	if d.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Dataset{}, wrap(err, "dataset %q of tenant %q", d.ID, tenant)
	}
	return d, nil
}

func getDataset(ctx context.Context, q querier, tenant, id string, lock bool) (db.Dataset, error) {
	query := `SELECT ` + datasetCols + ` FROM trellis_datasets WHERE tenant = $1 AND dataset_id = $2`
	if lock {
		query += ` FOR UPDATE`
	}
	d, err := scanDataset(q.QueryRow(ctx, query, tenant, id), tenant)
	if errors.Is(err, pgx.ErrNoRows) {
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
	err = d.write(ctx, func(tx pgx.Tx) error {
		now := dbutil.Now()
		_, err := tx.Exec(ctx, `INSERT INTO trellis_datasets (tenant, dataset_id, name, description, metadata, criteria, version, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, 1, $7, $7)`, tenant, ds.ID, ds.Name, ds.Description, string(md), string(crit), now)
		if isUnique(err, "") {
			return fmt.Errorf("server/db/postgres: dataset %q or a dataset named %q: %w", ds.ID, ds.Name, db.ErrConflict)
		}
		if err != nil {
			return wrap(err, "create dataset %q", ds.ID)
		}
		if err := insertCases(ctx, tx, tenant, ds.ID, 1, cases, now); err != nil {
			return err
		}
		out, err = getDataset(ctx, tx, tenant, ds.ID, false)
		return err
	})
	return out, err
}

// insertCases inserts cases as added at version, after the dataset's
// last position.
func insertCases(ctx context.Context, tx pgx.Tx, tenant, id string, version int, cases []db.DatasetCase, now time.Time) error {
	var pos int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(position), 0) FROM trellis_dataset_cases WHERE tenant = $1 AND dataset_id = $2`, tenant, id).Scan(&pos); err != nil {
		return wrap(err, "add cases to dataset %q", id)
	}
	for _, c := range cases {
		pos++
		if _, err := tx.Exec(ctx, `INSERT INTO trellis_dataset_cases (tenant, dataset_id, case_id, version_added, position, data, created_at)
			VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`, tenant, id, c.ID, version, pos, string(c.Data), now); err != nil {
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
	return getDataset(ctx, d.pool, tenant, id, false)
}

// UpdateDataset applies p to a dataset.
func (d *DB) UpdateDataset(ctx context.Context, tenant, id string, p db.DatasetPatch) (db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Dataset{}, err
	}
	var out db.Dataset
	err := d.write(ctx, func(tx pgx.Tx) error {
		ds, err := getDataset(ctx, tx, tenant, id, true)
		if err != nil {
			return err
		}
		applyDatasetPatch(&ds, p)
		md, crit, err := dbutil.Dataset(ds)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE trellis_datasets SET name = $1, description = $2, metadata = $3::jsonb, criteria = $4::jsonb, updated_at = $5
			WHERE tenant = $6 AND dataset_id = $7`, ds.Name, ds.Description, string(md), string(crit), dbutil.Now(), tenant, id)
		if isUnique(err, "") {
			return fmt.Errorf("server/db/postgres: a dataset named %q: %w", ds.Name, db.ErrConflict)
		}
		if err != nil {
			return wrap(err, "update dataset %q", id)
		}
		out, err = getDataset(ctx, tx, tenant, id, false)
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
	tag, err := d.pool.Exec(ctx, `DELETE FROM trellis_datasets WHERE tenant = $1 AND dataset_id = $2`, tenant, id)
	if err != nil {
		return wrap(err, "delete dataset %q", id)
	}
	if tag.RowsAffected() == 0 {
		return notFound("dataset", id, tenant)
	}
	return nil
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
	rows, err := d.pool.Query(ctx, `SELECT `+datasetCols+` FROM trellis_datasets
		WHERE tenant = $1 AND strpos(lower(name COLLATE "default"), lower($2 COLLATE "default")) > 0
		ORDER BY created_at DESC, dataset_id DESC LIMIT $3 OFFSET $4`, tenant, q.Name, limit, offset)
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

// changeCases runs fn on a dataset, locked, in a write transaction with
// the next version, then records that version.
func (d *DB) changeCases(ctx context.Context, tenant, id string, fn func(tx pgx.Tx, ds db.Dataset, next int, now time.Time) error) (db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Dataset{}, err
	}
	var out db.Dataset
	err := d.write(ctx, func(tx pgx.Tx) error {
		ds, err := getDataset(ctx, tx, tenant, id, true)
		if err != nil {
			return err
		}
		now := dbutil.Now()
		if err := fn(tx, ds, ds.Version+1, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE trellis_datasets SET version = $1, updated_at = $2 WHERE tenant = $3 AND dataset_id = $4`,
			ds.Version+1, now, tenant, id); err != nil {
			return wrap(err, "update dataset %q", id)
		}
		out, err = getDataset(ctx, tx, tenant, id, false)
		return err
	})
	return out, err
}

// AddCases adds cases in a new version.
func (d *DB) AddCases(ctx context.Context, tenant, id string, cases []db.DatasetCase) (db.Dataset, error) {
	if err := dbutil.Cases(cases); err != nil {
		return db.Dataset{}, err
	}
	return d.changeCases(ctx, tenant, id, func(tx pgx.Tx, ds db.Dataset, next int, now time.Time) error {
		if ds.Cases+len(cases) > db.MaxDatasetCases {
			return dbutil.Invalid("dataset %q would hold %d cases, more than %d", id, ds.Cases+len(cases), db.MaxDatasetCases)
		}
		ids := make([]string, len(cases))
		for i, c := range cases {
			ids[i] = c.ID
		}
		var taken string
		err := tx.QueryRow(ctx, `SELECT case_id FROM trellis_dataset_cases WHERE tenant = $1 AND dataset_id = $2 AND case_id = ANY($3) AND version_removed IS NULL LIMIT 1`,
			tenant, id, ids).Scan(&taken)
		if err == nil {
			return fmt.Errorf("server/db/postgres: dataset %q has a case %q already: %w", id, taken, db.ErrConflict)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return wrap(err, "add cases to dataset %q", id)
		}
		return insertCases(ctx, tx, tenant, id, next, cases, now)
	})
}

// retire marks the current row of a case as removed at version, keeping
// its position; ErrNotFound when the case is not current.
func retire(ctx context.Context, tx pgx.Tx, tenant, id, caseID string, version int) (int64, error) {
	var pos int64
	err := tx.QueryRow(ctx, `UPDATE trellis_dataset_cases SET version_removed = $1
		WHERE tenant = $2 AND dataset_id = $3 AND case_id = $4 AND version_removed IS NULL RETURNING position`,
		version, tenant, id, caseID).Scan(&pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("server/db/postgres: case %q of dataset %q (tenant %q): %w", caseID, id, tenant, db.ErrNotFound)
	}
	return pos, wrap(err, "change case %q of dataset %q", caseID, id)
}

// ReplaceCase replaces a current case's content in a new version.
func (d *DB) ReplaceCase(ctx context.Context, tenant, id string, c db.DatasetCase) (db.Dataset, error) {
	if err := dbutil.Cases([]db.DatasetCase{c}); err != nil {
		return db.Dataset{}, err
	}
	return d.changeCases(ctx, tenant, id, func(tx pgx.Tx, _ db.Dataset, next int, now time.Time) error {
		pos, err := retire(ctx, tx, tenant, id, c.ID, next)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO trellis_dataset_cases (tenant, dataset_id, case_id, version_added, position, data, created_at)
			VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`, tenant, id, c.ID, next, pos, string(c.Data), now)
		return wrap(err, "replace case %q of dataset %q", c.ID, id)
	})
}

// RemoveCase removes a current case in a new version.
func (d *DB) RemoveCase(ctx context.Context, tenant, id, caseID string) (db.Dataset, error) {
	return d.changeCases(ctx, tenant, id, func(tx pgx.Tx, _ db.Dataset, next int, _ time.Time) error {
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
	err := d.read(ctx, func(tx pgx.Tx) error {
		ds, err := getDataset(ctx, tx, tenant, id, false)
		if err != nil {
			return err
		}
		if version == 0 {
			version = ds.Version
		}
		if version > ds.Version {
			return fmt.Errorf("server/db/postgres: dataset %q has no version %d (latest %d): %w", id, version, ds.Version, db.ErrNotFound)
		}
		rows, err := tx.Query(ctx, `SELECT case_id, data::text, version_added, created_at FROM trellis_dataset_cases
			WHERE tenant = $1 AND dataset_id = $2 AND version_added <= $3 AND (version_removed IS NULL OR version_removed > $3)
			ORDER BY position`, tenant, id, version)
		if err != nil {
			return wrap(err, "read cases of dataset %q", id)
		}
		defer rows.Close()
		for rows.Next() {
			var c db.DatasetCase
			var data []byte
			if err := rows.Scan(&c.ID, &data, &c.Version, &c.CreatedAt); err != nil {
				return wrap(err, "read cases of dataset %q", id)
			}
			c.Data, c.CreatedAt = data, utc(c.CreatedAt)
			out = append(out, c)
		}
		return wrap(rows.Err(), "read cases of dataset %q", id)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
