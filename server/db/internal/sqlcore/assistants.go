package sqlcore

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// scanAssistant reads ID, graph ID, name, description, config, context,
// metadata, version, creation and update times, and returns the stored
// metadata JSON too; an undecodable row is an error naming it.
func (s *Store) scanAssistant(r Row, tenant string) (db.Assistant, []byte, error) {
	var a db.Assistant
	var config, cx, md []byte
	if err := r.Scan(&a.ID, &a.GraphID, &a.Name, &a.Description, &config, &cx, &md, &a.Version,
		s.d.ScanTime(&a.CreatedAt), s.d.ScanTime(&a.UpdatedAt)); err != nil {
		return db.Assistant{}, nil, err
	}
	var err error
	if a.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Assistant{}, nil, fmt.Errorf("%s: assistant %q (tenant %q) version %d: %w", s.d.Name(), a.ID, tenant, a.Version, err)
	}
	a.Config, a.Context = config, cx
	return a, md, nil
}

func (s *Store) assistantScan(tenant string) scanFunc[db.Assistant] {
	return func(r Row) (db.Assistant, []byte, error) { return s.scanAssistant(r, tenant) }
}

func (s *Store) getAssistant(ctx context.Context, c Conn, tenant, id string, lock bool) (db.Assistant, error) {
	return getOne(ctx, s, c, "assistant", tenant, id, rowOnly(s.assistantScan(tenant)), locked(lock, s.q.GetAssistant, s.q.GetAssistantForUpdate))
}

// CreateAssistant stores a new assistant as its version 1 (an empty ID gets
// a new UUID). GraphID is required; Config and Context must be JSON
// objects ({} when empty). A taken ID is ErrConflict with IfExistsRaise
// and returns the stored assistant with IfExistsDoNothing.
func (s *Store) CreateAssistant(ctx context.Context, tenant string, a db.Assistant, ifExists db.IfExists) (db.Assistant, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Assistant{}, err
	}
	if a.GraphID == "" {
		return db.Assistant{}, dbutil.Invalid("the assistant's graph_id is empty")
	}
	if ifExists == "" {
		ifExists = db.IfExistsRaise
	}
	if ifExists != db.IfExistsRaise && ifExists != db.IfExistsDoNothing {
		return db.Assistant{}, dbutil.Invalid(`if_exists %q is neither "raise" nor "do_nothing"`, ifExists)
	}
	if a.ID != "" {
		if err := db.CheckID("assistant", a.ID); err != nil {
			return db.Assistant{}, err
		}
	}
	config, err := dbutil.Object("config", a.Config)
	if err != nil {
		return db.Assistant{}, err
	}
	cctx, err := dbutil.Object("context", a.Context)
	if err != nil {
		return db.Assistant{}, err
	}
	md, err := dbutil.EncodeMetadata(a.Metadata)
	if err != nil {
		return db.Assistant{}, err
	}
	if a.ID == "" {
		a.ID = dbutil.NewID()
	}
	now := s.d.Time(dbutil.Now())
	var out db.Assistant
	err = s.d.Write(ctx, func(tx Conn) error {
		n, err := tx.Exec(ctx, s.q.InsertAssistant, tenant, a.ID, a.GraphID, a.Name, a.Description, config, cctx, md, now)
		if err != nil {
			return s.wrap(err, "create assistant %q", a.ID)
		}
		if n == 0 {
			if ifExists == db.IfExistsDoNothing {
				out, err = s.getAssistant(ctx, tx, tenant, a.ID, false)
				return err
			}
			return s.fail(db.ErrConflict, "assistant %q exists", a.ID)
		}
		if _, err := tx.Exec(ctx, s.q.InsertAssistantVersion, tenant, a.ID, 1, a.GraphID, a.Name, a.Description, config, cctx, md, now); err != nil {
			return s.wrap(err, "create assistant %q", a.ID)
		}
		out, err = s.getAssistant(ctx, tx, tenant, a.ID, false)
		return err
	})
	return out, err
}

// GetAssistant returns the assistant's latest version.
func (s *Store) GetAssistant(ctx context.Context, tenant, id string) (db.Assistant, error) {
	return s.getAssistant(ctx, s.d.Reader(), tenant, id, false)
}

// UpdateAssistant makes a new version (one above the highest) from the
// latest with p applied, metadata merged key by key, and makes it the
// latest.
func (s *Store) UpdateAssistant(ctx context.Context, tenant, id string, p db.AssistantPatch) (db.Assistant, error) {
	if p.GraphID != nil && *p.GraphID == "" {
		return db.Assistant{}, dbutil.Invalid("the assistant's graph_id cannot be set empty")
	}
	var config, cctx []byte
	var err error
	if p.Config != nil {
		if config, err = dbutil.Object("config", p.Config); err != nil {
			return db.Assistant{}, err
		}
	}
	if p.Context != nil {
		if cctx, err = dbutil.Object("context", p.Context); err != nil {
			return db.Assistant{}, err
		}
	}
	var out db.Assistant
	err = s.d.Write(ctx, func(tx Conn) error {
		a, err := s.getAssistant(ctx, tx, tenant, id, true)
		if err != nil {
			return err
		}
		applyAssistantPatch(&a, p, config, cctx)
		md, err := dbutil.EncodeMetadata(dbutil.Merge(a.Metadata, p.Metadata))
		if err != nil {
			return err
		}
		var version int
		if err := tx.QueryRow(ctx, s.q.NextAssistantVersion, tenant, id).Scan(&version); err != nil {
			return s.wrap(err, "update assistant %q", id)
		}
		now := s.d.Time(dbutil.Now())
		if _, err := tx.Exec(ctx, s.q.InsertAssistantVersion, tenant, id, version, a.GraphID, a.Name, a.Description,
			[]byte(a.Config), []byte(a.Context), md, now); err != nil {
			return s.wrap(err, "update assistant %q", id)
		}
		if _, err := tx.Exec(ctx, s.q.UpdateAssistant, a.GraphID, a.Name, a.Description, []byte(a.Config), []byte(a.Context),
			md, version, now, tenant, id); err != nil {
			return s.wrap(err, "update assistant %q", id)
		}
		out, err = s.getAssistant(ctx, tx, tenant, id, false)
		return err
	})
	return out, err
}

func applyAssistantPatch(a *db.Assistant, p db.AssistantPatch, config, cctx []byte) {
	if p.GraphID != nil {
		a.GraphID = *p.GraphID
	}
	if p.Name != nil {
		a.Name = *p.Name
	}
	if p.Description != nil {
		a.Description = *p.Description
	}
	if config != nil {
		a.Config = config
	}
	if cctx != nil {
		a.Context = cctx
	}
}

// DeleteAssistant deletes the assistant with all its versions. Runs that
// name it are kept.
func (s *Store) DeleteAssistant(ctx context.Context, tenant, id string) error {
	n, err := s.d.Exec(ctx, s.q.DeleteAssistant, tenant, id)
	if err != nil {
		return s.wrap(err, "delete assistant %q", id)
	}
	if n == 0 {
		return s.notFound("assistant", id, tenant)
	}
	return nil
}

// assistantFilter builds the filter of q.
func (s *Store) assistantFilter(tenant string, q db.AssistantQuery) (*filter[db.Assistant], error) {
	md, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return nil, err
	}
	f := newFilter[db.Assistant](s.d)
	f.where("tenant = %s", tenant)
	if q.GraphID != "" {
		f.where("graph_id = %s", q.GraphID)
	}
	f.nameContains("name", q.Name, func(a db.Assistant) string { return a.Name })
	f.contains("metadata", md, func(_ db.Assistant, md []byte) []byte { return md })
	return f, nil
}

// SearchAssistants lists the tenant's assistants (latest versions) that
// match q: graph ID equal, name containing q.Name (case-insensitive),
// metadata containing q.Metadata; sorted by q.SortBy (assistant_id,
// graph_id, name, created_at, updated_at; ties by ID), then paged.
func (s *Store) SearchAssistants(ctx context.Context, tenant string, q db.AssistantQuery) ([]db.Assistant, error) {
	return s.assistants(tenant).page(ctx, s, q.Query, func() (*filter[db.Assistant], error) { return s.assistantFilter(tenant, q) })
}

// CountAssistants counts the assistants SearchAssistants would find
// without paging.
func (s *Store) CountAssistants(ctx context.Context, tenant string, q db.AssistantQuery) (int, error) {
	return s.assistants(tenant).total(ctx, s, func() (*filter[db.Assistant], error) { return s.assistantFilter(tenant, q) })
}

func (s *Store) assistants(tenant string) listing[db.Assistant] {
	return listing[db.Assistant]{what: "assistants", sel: s.q.SelectAssistants, count: s.q.CountAssistants,
		sorts: dbutil.AssistantSort, idCol: "assistant_id", scan: s.assistantScan(tenant)}
}

// AssistantVersions lists the assistant's versions, newest first, those
// whose metadata contains q.Metadata, paged by q.Limit and q.Offset. Each
// version's CreatedAt and UpdatedAt are when it was made. q.SortBy must be
// "" or "version"; q.SortOrder "asc" lists oldest first.
func (s *Store) AssistantVersions(ctx context.Context, tenant, id string, q db.Query) ([]db.Assistant, error) {
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	if q.SortBy != "" && q.SortBy != "version" {
		return nil, dbutil.Invalid(`versions sort only by "version", not %q`, q.SortBy)
	}
	_, dir, err := dbutil.Order(db.Query{SortOrder: q.SortOrder}, dbutil.AssistantSort)
	if err != nil {
		return nil, err
	}
	md, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return nil, err
	}
	f := newFilter[db.Assistant](s.d)
	f.where("tenant = %s AND assistant_id = %s", tenant, id)
	f.contains("metadata", md, func(_ db.Assistant, md []byte) []byte { return md })
	var out []db.Assistant
	err = s.d.Read(ctx, func(tx Conn) error {
		if _, err := s.getAssistant(ctx, tx, tenant, id, false); err != nil {
			return err
		}
		var err error
		out, err = search(ctx, tx, f, s.q.SelectAssistantVersions, "version "+dir, limit, offset, s.assistantScan(tenant))
		return s.wrap(err, "versions of assistant %q", id)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetLatestVersion makes an existing version the latest: the assistant
// takes that version's graph, name, description, config, context and
// metadata, and its UpdatedAt is now.
func (s *Store) SetLatestVersion(ctx context.Context, tenant, id string, version int) (db.Assistant, error) {
	var out db.Assistant
	err := s.d.Write(ctx, func(tx Conn) error {
		if _, err := s.getAssistant(ctx, tx, tenant, id, true); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, s.q.SetLatestVersion, s.d.Time(dbutil.Now()), tenant, id, version)
		if err != nil {
			return s.wrap(err, "set the latest version of assistant %q", id)
		}
		if n == 0 {
			return s.fail(db.ErrNotFound, "assistant %q has no version %d", id, version)
		}
		out, err = s.getAssistant(ctx, tx, tenant, id, false)
		return err
	})
	return out, err
}
