package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

const assistantCols = `assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

// scanAssistant reads a row of assistantCols; an undecodable row is an
// error naming it.
func scanAssistant(s scanner, tenant string) (db.Assistant, error) {
	a, _, err := scanAssistantMD(s, tenant)
	return a, err
}

// scanAssistantMD is scanAssistant that also returns the stored metadata
// JSON, which searches match as stored (a large integer decoded into a
// float64 would no longer equal the filter's).
func scanAssistantMD(s scanner, tenant string) (db.Assistant, []byte, error) {
	var a db.Assistant
	var config, cx, md []byte
	var created, updated int64
	if err := s.Scan(&a.ID, &a.GraphID, &a.Name, &a.Description, &config, &cx, &md, &a.Version, &created, &updated); err != nil {
		return db.Assistant{}, nil, err
	}
	var err error
	if a.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Assistant{}, nil, fmt.Errorf("server/db/sqlite: assistant %q (tenant %q) version %d: %w", a.ID, tenant, a.Version, err)
	}
	a.Config, a.Context = config, cx
	a.CreatedAt, a.UpdatedAt = fromMicros(created), fromMicros(updated)
	return a, md, nil
}

// CreateAssistant stores a new assistant as its version 1 (an empty ID gets
// a new UUID). GraphID is required; Config and Context must be JSON
// objects ({} when empty). A taken ID is ErrConflict with IfExistsRaise
// and returns the stored assistant with IfExistsDoNothing.
func (d *DB) CreateAssistant(ctx context.Context, tenant string, a db.Assistant, ifExists db.IfExists) (db.Assistant, error) {
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
	now := dbutil.Now()
	var out db.Assistant
	err = d.write(ctx, func(tx *sql.Tx) error {
		existing, err := getAssistant(ctx, tx, tenant, a.ID)
		if err == nil {
			if ifExists == db.IfExistsDoNothing {
				out = existing
				return nil
			}
			return fmt.Errorf("server/db/sqlite: assistant %q exists: %w", a.ID, db.ErrConflict)
		}
		if !errors.Is(err, db.ErrNotFound) {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO trellis_assistants (tenant, `+assistantCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
			tenant, a.ID, a.GraphID, a.Name, a.Description, config, cctx, md, micros(now), micros(now)); err != nil {
			return wrap(err, "create assistant %q", a.ID)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO trellis_assistant_versions
			(tenant, assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
			VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?)`,
			tenant, a.ID, a.GraphID, a.Name, a.Description, config, cctx, md, micros(now)); err != nil {
			return wrap(err, "create assistant %q", a.ID)
		}
		out, err = getAssistant(ctx, tx, tenant, a.ID)
		return err
	})
	return out, err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func getAssistant(ctx context.Context, q querier, tenant, id string) (db.Assistant, error) {
	a, err := scanAssistant(q.QueryRowContext(ctx, `SELECT `+assistantCols+` FROM trellis_assistants WHERE tenant = ? AND assistant_id = ?`, tenant, id), tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return db.Assistant{}, notFound("assistant", id, tenant)
	}
	if err != nil {
		return db.Assistant{}, wrap(err, "get assistant %q", id)
	}
	return a, nil
}

// GetAssistant returns the assistant's latest version.
func (d *DB) GetAssistant(ctx context.Context, tenant, id string) (db.Assistant, error) {
	return getAssistant(ctx, d.sq.Read, tenant, id)
}

// UpdateAssistant makes a new version (one above the highest) from the
// latest with p applied, metadata merged key by key, and makes it the
// latest.
func (d *DB) UpdateAssistant(ctx context.Context, tenant, id string, p db.AssistantPatch) (db.Assistant, error) {
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
	err = d.write(ctx, func(tx *sql.Tx) error {
		a, err := getAssistant(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
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
		md, err := dbutil.EncodeMetadata(dbutil.Merge(a.Metadata, p.Metadata))
		if err != nil {
			return err
		}
		var version int
		if err := tx.QueryRowContext(ctx, `SELECT max(version) + 1 FROM trellis_assistant_versions WHERE tenant = ? AND assistant_id = ?`,
			tenant, id).Scan(&version); err != nil {
			return wrap(err, "update assistant %q", id)
		}
		now := micros(dbutil.Now())
		if _, err := tx.ExecContext(ctx, `INSERT INTO trellis_assistant_versions
			(tenant, assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tenant, id, version, a.GraphID, a.Name, a.Description, []byte(a.Config), []byte(a.Context), md, now); err != nil {
			return wrap(err, "update assistant %q", id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE trellis_assistants SET graph_id = ?, name = ?, description = ?, config = ?,
			context = ?, metadata = ?, version = ?, updated_at = ? WHERE tenant = ? AND assistant_id = ?`,
			a.GraphID, a.Name, a.Description, []byte(a.Config), []byte(a.Context), md, version, now, tenant, id); err != nil {
			return wrap(err, "update assistant %q", id)
		}
		out, err = getAssistant(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// DeleteAssistant deletes the assistant with all its versions. Runs that
// name it are kept.
func (d *DB) DeleteAssistant(ctx context.Context, tenant, id string) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM trellis_assistants WHERE tenant = ? AND assistant_id = ?`, tenant, id)
		if err != nil {
			return wrap(err, "delete assistant %q", id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("assistant", id, tenant)
		}
		return nil
	})
}

// assistantWhere builds the SQL filter and the Go filters of q.
func assistantWhere(tenant string, q db.AssistantQuery) (where string, args []any, goMatch func(db.Assistant, []byte) bool, err error) {
	where, args = ` WHERE tenant = ?`, []any{tenant}
	if q.GraphID != "" {
		where += ` AND graph_id = ?`
		args = append(args, q.GraphID)
	}
	f, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return "", nil, nil, err
	}
	name := strings.ToLower(q.Name)
	if f.Empty() && name == "" {
		return where, args, nil, nil
	}
	return where, args, func(a db.Assistant, md []byte) bool {
		if name != "" && !strings.Contains(strings.ToLower(a.Name), name) {
			return false
		}
		if f.Empty() {
			return true
		}
		return f.Match(md)
	}, nil
}

// SearchAssistants lists the tenant's assistants (latest versions) that
// match q: graph ID equal, name containing q.Name (case-insensitive),
// metadata containing q.Metadata; sorted by q.SortBy (assistant_id,
// graph_id, name, created_at, updated_at; ties by ID), then paged.
func (d *DB) SearchAssistants(ctx context.Context, tenant string, q db.AssistantQuery) ([]db.Assistant, error) {
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	col, dir, err := dbutil.Order(q.Query, dbutil.AssistantSort)
	if err != nil {
		return nil, err
	}
	where, args, match, err := assistantWhere(tenant, q)
	if err != nil {
		return nil, err
	}
	return search(ctx, d, assistantListing, tenant, where, args, match, col, dir, limit, offset)
}

// CountAssistants counts the assistants SearchAssistants would find
// without paging.
func (d *DB) CountAssistants(ctx context.Context, tenant string, q db.AssistantQuery) (int, error) {
	where, args, match, err := assistantWhere(tenant, q)
	if err != nil {
		return 0, err
	}
	return count(ctx, d, assistantListing, tenant, where, args, match)
}

var assistantListing = listing[db.Assistant]{what: "assistants", table: "trellis_assistants", cols: assistantCols, idCol: "assistant_id", scan: scanAssistantMD}

const versionCols = `assistant_id, graph_id, name, description, config, context, metadata, version, created_at, created_at`

// AssistantVersions lists the assistant's versions, newest first, those
// whose metadata contains q.Metadata, paged by q.Limit and q.Offset. Each
// version's CreatedAt and UpdatedAt are when it was made. q.SortBy must be
// "" or "version"; q.SortOrder "asc" lists oldest first.
func (d *DB) AssistantVersions(ctx context.Context, tenant, id string, q db.Query) ([]db.Assistant, error) {
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
	f, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return nil, err
	}
	out := []db.Assistant{}
	err = d.read(ctx, func(tx *sql.Tx) error {
		if _, err := getAssistant(ctx, tx, tenant, id); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+versionCols+` FROM trellis_assistant_versions
			WHERE tenant = ? AND assistant_id = ? ORDER BY version `+dir, tenant, id)
		if err != nil {
			return wrap(err, "versions of assistant %q", id)
		}
		defer rows.Close()
		for len(out) < limit && rows.Next() {
			a, md, err := scanAssistantMD(rows, tenant)
			if err != nil {
				return err
			}
			if !f.Match(md) {
				continue
			}
			if offset > 0 {
				offset--
				continue
			}
			out = append(out, a)
		}
		return wrap(rows.Err(), "versions of assistant %q", id)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetLatestVersion makes an existing version the latest: the assistant
// takes that version's graph, name, description, config, context and
// metadata, and its UpdatedAt is now.
func (d *DB) SetLatestVersion(ctx context.Context, tenant, id string, version int) (db.Assistant, error) {
	var out db.Assistant
	err := d.write(ctx, func(tx *sql.Tx) error {
		if _, err := getAssistant(ctx, tx, tenant, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE trellis_assistants SET
			(graph_id, name, description, config, context, metadata, version, updated_at) =
			(SELECT graph_id, name, description, config, context, metadata, version, ? FROM trellis_assistant_versions
			 WHERE tenant = ? AND assistant_id = ? AND version = ?)
			WHERE tenant = ? AND assistant_id = ? AND EXISTS (SELECT 1 FROM trellis_assistant_versions
			 WHERE tenant = ? AND assistant_id = ? AND version = ?)`,
			micros(dbutil.Now()), tenant, id, version, tenant, id, tenant, id, version)
		if err != nil {
			return wrap(err, "set the latest version of assistant %q", id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("server/db/sqlite: assistant %q has no version %d: %w", id, version, db.ErrNotFound)
		}
		out, err = getAssistant(ctx, tx, tenant, id)
		return err
	})
	return out, err
}
