package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// scanDataset reads ID, name, description, metadata, criteria, version,
// creation and update times and the count of current cases.
func (s *Store) scanDataset(r Row, tenant string) (db.Dataset, error) {
	var d db.Dataset
	var md, crit []byte
	if err := r.Scan(&d.ID, &d.Name, &d.Description, &md, &crit, &d.Version,
		s.d.ScanTime(&d.CreatedAt), s.d.ScanTime(&d.UpdatedAt), &d.Cases); err != nil {
		return db.Dataset{}, err
	}
	d.Criteria = crit
	var err error
	if d.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Dataset{}, s.wrap(err, "dataset %q of tenant %q", d.ID, tenant)
	}
	return d, nil
}

// getDataset reads a dataset, locking it when lock is set.
func (s *Store) getDataset(ctx context.Context, c Conn, tenant, id string, lock bool) (db.Dataset, error) {
	scan := func(r Row) (db.Dataset, error) { return s.scanDataset(r, tenant) }
	return getOne(ctx, s, c, "dataset", tenant, id, scan, locked(lock, s.q.GetDataset, s.q.GetDatasetForUpdate))
}

// CreateDataset stores a dataset at version 1 with its cases.
func (s *Store) CreateDataset(ctx context.Context, tenant string, ds db.Dataset, cases []db.DatasetCase) (db.Dataset, error) {
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
	err = s.d.Write(ctx, func(tx Conn) error {
		now := dbutil.Now()
		_, err := tx.Exec(ctx, s.q.InsertDataset, tenant, ds.ID, ds.Name, ds.Description, md, crit, s.d.Time(now))
		if s.d.IsUnique(err) {
			return s.fail(db.ErrConflict, "dataset %q or a dataset named %q", ds.ID, ds.Name)
		}
		if err != nil {
			return s.wrap(err, "create dataset %q", ds.ID)
		}
		if err := s.insertCases(ctx, tx, tenant, ds.ID, 1, cases, now); err != nil {
			return err
		}
		out, err = s.getDataset(ctx, tx, tenant, ds.ID, false)
		return err
	})
	return out, err
}

// insertCases inserts cases as added at version, after the dataset's
// last position.
func (s *Store) insertCases(ctx context.Context, tx Conn, tenant, id string, version int, cases []db.DatasetCase, now time.Time) error {
	var pos int64
	if err := tx.QueryRow(ctx, s.q.LastCasePosition, tenant, id).Scan(&pos); err != nil {
		return s.wrap(err, "add cases to dataset %q", id)
	}
	for _, c := range cases {
		pos++
		if _, err := tx.Exec(ctx, s.q.InsertCase, tenant, id, c.ID, version, pos, []byte(c.Data), s.d.Time(now)); err != nil {
			return s.wrap(err, "add case %q to dataset %q", c.ID, id)
		}
	}
	return nil
}

// GetDataset returns a dataset.
func (s *Store) GetDataset(ctx context.Context, tenant, id string) (db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Dataset{}, err
	}
	return s.getDataset(ctx, s.d.Reader(), tenant, id, false)
}

// UpdateDataset applies p to a dataset.
func (s *Store) UpdateDataset(ctx context.Context, tenant, id string, p db.DatasetPatch) (db.Dataset, error) {
	return s.editDataset(ctx, tenant, id, func(tx Conn, ds db.Dataset) error {
		applyDatasetPatch(&ds, p)
		md, crit, err := dbutil.Dataset(ds)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, s.q.UpdateDataset, ds.Name, ds.Description, md, crit, s.d.Time(dbutil.Now()), tenant, id)
		if s.d.IsUnique(err) {
			return s.fail(db.ErrConflict, "a dataset named %q", ds.Name)
		}
		return s.wrap(err, "update dataset %q", id)
	})
}

// editDataset runs fn on a dataset, locked, in a write transaction and
// returns the dataset as fn left it.
func (s *Store) editDataset(ctx context.Context, tenant, id string, fn func(tx Conn, ds db.Dataset) error) (db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Dataset{}, err
	}
	var out db.Dataset
	err := s.d.Write(ctx, func(tx Conn) error {
		ds, err := s.getDataset(ctx, tx, tenant, id, true)
		if err != nil {
			return err
		}
		if err := fn(tx, ds); err != nil {
			return err
		}
		out, err = s.getDataset(ctx, tx, tenant, id, false)
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
func (s *Store) DeleteDataset(ctx context.Context, tenant, id string) error {
	if err := dbutil.Tenant(tenant); err != nil {
		return err
	}
	n, err := s.d.Exec(ctx, s.q.DeleteDataset, tenant, id)
	if err != nil {
		return s.wrap(err, "delete dataset %q", id)
	}
	if n == 0 {
		return s.notFound("dataset", id, tenant)
	}
	return nil
}

// SearchDatasets lists the tenant's datasets, newest first.
func (s *Store) SearchDatasets(ctx context.Context, tenant string, q db.DatasetQuery) ([]db.Dataset, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	scan := func(r Row) (db.Dataset, error) { return s.scanDataset(r, tenant) }
	out, err := collect(ctx, s.d.Reader(), scan, s.q.SearchDatasets, tenant, q.Name, limit, offset)
	if err != nil {
		return nil, s.wrap(err, "search datasets")
	}
	return out, nil
}

// changeCases runs fn on a dataset, locked, in a write transaction with
// the next version, then records that version.
func (s *Store) changeCases(ctx context.Context, tenant, id string, fn func(tx Conn, ds db.Dataset, next int, now time.Time) error) (db.Dataset, error) {
	return s.editDataset(ctx, tenant, id, func(tx Conn, ds db.Dataset) error {
		now := dbutil.Now()
		if err := fn(tx, ds, ds.Version+1, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.q.SetDatasetVersion, ds.Version+1, s.d.Time(now), tenant, id)
		return s.wrap(err, "update dataset %q", id)
	})
}

// AddCases adds cases in a new version.
func (s *Store) AddCases(ctx context.Context, tenant, id string, cases []db.DatasetCase) (db.Dataset, error) {
	if err := dbutil.Cases(cases); err != nil {
		return db.Dataset{}, err
	}
	return s.changeCases(ctx, tenant, id, func(tx Conn, ds db.Dataset, next int, now time.Time) error {
		if ds.Cases+len(cases) > db.MaxDatasetCases {
			return dbutil.Invalid("dataset %q would hold %d cases, more than %d", id, ds.Cases+len(cases), db.MaxDatasetCases)
		}
		ids := make([]string, len(cases))
		for i, c := range cases {
			ids[i] = c.ID
		}
		var taken string
		err := tx.QueryRow(ctx, s.q.TakenCase, tenant, id, s.d.List(ids)).Scan(&taken)
		if err == nil {
			return s.fail(db.ErrConflict, "dataset %q has a case %q already", id, taken)
		}
		if !s.d.IsNoRows(err) {
			return s.wrap(err, "add cases to dataset %q", id)
		}
		return s.insertCases(ctx, tx, tenant, id, next, cases, now)
	})
}

// retire marks the current row of a case as removed at version, keeping
// its position; ErrNotFound when the case is not current.
func (s *Store) retire(ctx context.Context, tx Conn, tenant, id, caseID string, version int) (int64, error) {
	var pos int64
	err := tx.QueryRow(ctx, s.q.RetireCase, version, tenant, id, caseID).Scan(&pos)
	if s.d.IsNoRows(err) {
		return 0, s.fail(db.ErrNotFound, "case %q of dataset %q (tenant %q)", caseID, id, tenant)
	}
	return pos, s.wrap(err, "change case %q of dataset %q", caseID, id)
}

// ReplaceCase replaces a current case's content in a new version.
func (s *Store) ReplaceCase(ctx context.Context, tenant, id string, c db.DatasetCase) (db.Dataset, error) {
	if err := dbutil.Cases([]db.DatasetCase{c}); err != nil {
		return db.Dataset{}, err
	}
	return s.changeCases(ctx, tenant, id, func(tx Conn, _ db.Dataset, next int, now time.Time) error {
		pos, err := s.retire(ctx, tx, tenant, id, c.ID, next)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, s.q.InsertCase, tenant, id, c.ID, next, pos, []byte(c.Data), s.d.Time(now))
		return s.wrap(err, "replace case %q of dataset %q", c.ID, id)
	})
}

// RemoveCase removes a current case in a new version.
func (s *Store) RemoveCase(ctx context.Context, tenant, id, caseID string) (db.Dataset, error) {
	return s.changeCases(ctx, tenant, id, func(tx Conn, _ db.Dataset, next int, _ time.Time) error {
		_, err := s.retire(ctx, tx, tenant, id, caseID, next)
		return err
	})
}

// DatasetCases returns the cases as of a version.
func (s *Store) DatasetCases(ctx context.Context, tenant, id string, version int) ([]db.DatasetCase, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	if version < 0 {
		return nil, dbutil.Invalid("version %d is negative", version)
	}
	var out []db.DatasetCase
	err := s.d.Read(ctx, func(tx Conn) error {
		ds, err := s.getDataset(ctx, tx, tenant, id, false)
		if err != nil {
			return err
		}
		if version == 0 {
			version = ds.Version
		}
		if version > ds.Version {
			return s.fail(db.ErrNotFound, "dataset %q has no version %d (latest %d)", id, version, ds.Version)
		}
		scan := func(r Row) (db.DatasetCase, error) {
			var c db.DatasetCase
			var data []byte
			err := r.Scan(&c.ID, &data, &c.Version, s.d.ScanTime(&c.CreatedAt))
			c.Data = data
			return c, err
		}
		out, err = collect(ctx, tx, scan, s.q.DatasetCases, tenant, id, version)
		return s.wrap(err, "read cases of dataset %q", id)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
