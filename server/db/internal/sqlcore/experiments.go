package sqlcore

import (
	"context"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// scanExperiment reads ID, name, dataset ID and version, assistant ID,
// repetitions, concurrency, baseline ID, metadata, status, total, summary,
// error, creation and update times, the pinned assistant version and the
// pinned criteria.
func (s *Store) scanExperiment(r Row, tenant string) (db.Experiment, error) {
	var e db.Experiment
	var md, summary, criteria []byte
	var status string
	if err := r.Scan(&e.ID, &e.Name, &e.DatasetID, &e.DatasetVersion, &e.AssistantID, &e.Repetitions, &e.Concurrency, &e.BaselineID,
		&md, &status, &e.Total, &summary, &e.Error, s.d.ScanTime(&e.CreatedAt), s.d.ScanTime(&e.UpdatedAt), &e.AssistantVersion, &criteria); err != nil {
		return db.Experiment{}, err
	}
	e.Status = db.ExperimentStatus(status)
	if len(summary) > 0 {
		e.Summary = summary
	}
	if len(criteria) > 0 {
		e.Criteria = criteria
	}
	var err error
	if e.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Experiment{}, s.wrap(err, "experiment %q of tenant %q", e.ID, tenant)
	}
	return e, nil
}

func (s *Store) getExperiment(ctx context.Context, c Conn, tenant, id string) (db.Experiment, error) {
	scan := func(r Row) (db.Experiment, error) { return s.scanExperiment(r, tenant) }
	return getOne(ctx, s, c, "experiment", tenant, id, scan, s.q.GetExperiment)
}

// CreateExperiment stores a pending experiment.
func (s *Store) CreateExperiment(ctx context.Context, tenant string, e db.Experiment) (db.Experiment, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Experiment{}, err
	}
	md, err := dbutil.Experiment(e)
	if err != nil {
		return db.Experiment{}, err
	}
	var criteria []byte // NULL: the dataset's criteria when it runs
	if e.Criteria != nil {
		criteria = e.Criteria
	}
	if e.ID == "" {
		e.ID = dbutil.NewID()
	}
	var out db.Experiment
	err = s.d.Write(ctx, func(tx Conn) error {
		if _, err := s.getDataset(ctx, tx, tenant, e.DatasetID, false); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.q.InsertExperiment, tenant, e.ID, e.Name, e.DatasetID, e.DatasetVersion, e.AssistantID,
			e.Repetitions, e.Concurrency, e.BaselineID, md, string(db.ExperimentPending), e.Total, s.d.Time(dbutil.Now()), e.AssistantVersion, criteria)
		if s.d.IsUnique(err) {
			return s.wrap(db.ErrConflict, "experiment %q", e.ID)
		}
		if err != nil {
			return s.wrap(err, "create experiment %q", e.ID)
		}
		out, err = s.getExperiment(ctx, tx, tenant, e.ID)
		return err
	})
	return out, err
}

// GetExperiment returns an experiment.
func (s *Store) GetExperiment(ctx context.Context, tenant, id string) (db.Experiment, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Experiment{}, err
	}
	return s.getExperiment(ctx, s.d.Reader(), tenant, id)
}

// SearchExperiments lists experiments, newest first.
func (s *Store) SearchExperiments(ctx context.Context, tenant string, q db.ExperimentQuery) ([]db.Experiment, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	scan := func(r Row) (db.Experiment, error) { return s.scanExperiment(r, tenant) }
	out, err := collect(ctx, s.d.Reader(), scan, s.q.SearchExperiments, tenant, q.DatasetID, q.AssistantID, limit, offset)
	if err != nil {
		return nil, s.wrap(err, "search experiments")
	}
	return out, nil
}

// UpdateExperiment changes a live experiment's status.
func (s *Store) UpdateExperiment(ctx context.Context, tenant, id string, u db.ExperimentUpdate) (db.Experiment, bool, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Experiment{}, false, err
	}
	if err := dbutil.ExperimentUpdate(u); err != nil {
		return db.Experiment{}, false, err
	}
	var out db.Experiment
	var changed bool
	err := s.d.Write(ctx, func(tx Conn) error {
		n, err := tx.Exec(ctx, s.q.UpdateExperiment, string(u.Status), nullBytes(u.Summary), u.Error, s.d.Time(dbutil.Now()), tenant, id)
		if err != nil {
			return s.wrap(err, "update experiment %q", id)
		}
		changed = n > 0
		out, err = s.getExperiment(ctx, tx, tenant, id)
		return err
	})
	return out, changed, err
}

// RecordExperimentResult stores a unit's result once.
func (s *Store) RecordExperimentResult(ctx context.Context, tenant string, r db.ExperimentResult) (bool, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return false, err
	}
	if err := dbutil.ExperimentResult(r); err != nil {
		return false, err
	}
	var inserted bool
	err := s.d.Write(ctx, func(tx Conn) error {
		if _, err := s.getExperiment(ctx, tx, tenant, r.ExperimentID); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, s.q.InsertExperimentResult, tenant, r.ExperimentID, r.CaseID, r.Repetition, r.Passed, []byte(r.Data), s.d.Time(dbutil.Now()))
		if err != nil {
			return s.wrap(err, "record case %q of experiment %q", r.CaseID, r.ExperimentID)
		}
		inserted = n > 0
		return nil
	})
	return inserted, err
}

// ExperimentResults lists an experiment's results.
func (s *Store) ExperimentResults(ctx context.Context, tenant, id string) ([]db.ExperimentResult, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	var out []db.ExperimentResult
	err := s.d.Read(ctx, func(tx Conn) error {
		if _, err := s.getExperiment(ctx, tx, tenant, id); err != nil {
			return err
		}
		scan := func(row Row) (db.ExperimentResult, error) {
			r := db.ExperimentResult{ExperimentID: id}
			var data []byte
			err := row.Scan(&r.CaseID, &r.Repetition, &r.Passed, &data, s.d.ScanTime(&r.CreatedAt))
			r.Data = data
			return r, err
		}
		var err error
		out, err = collect(ctx, tx, scan, s.q.ExperimentResults, tenant, id)
		return s.wrap(err, "read results of experiment %q", id)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExperimentProgress counts an experiment's results.
func (s *Store) ExperimentProgress(ctx context.Context, tenant, id string) (db.ExperimentProgress, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.ExperimentProgress{}, err
	}
	var p db.ExperimentProgress
	err := s.d.Read(ctx, func(tx Conn) error {
		if _, err := s.getExperiment(ctx, tx, tenant, id); err != nil {
			return err
		}
		return s.wrap(tx.QueryRow(ctx, s.q.ExperimentProgress, tenant, id).Scan(&p.Done, &p.Passed), "count results of experiment %q", id)
	})
	return p, err
}

// nullBytes passes stored bytes, or NULL for none.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
