package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

const assistantCols = `assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at`

// scanAssistant reads a row of assistantCols; an undecodable row is an
// error naming it.
func scanAssistant(s scanner, tenant string) (db.Assistant, error) {
	var a db.Assistant
	var config, cx, md []byte
	if err := s.Scan(&a.ID, &a.GraphID, &a.Name, &a.Description, &config, &cx, &md, &a.Version, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return db.Assistant{}, err
	}
	var err error
	if a.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Assistant{}, fmt.Errorf("server/db/postgres: assistant %q (tenant %q) version %d: %w", a.ID, tenant, a.Version, err)
	}
	a.Config, a.Context = config, cx
	a.CreatedAt, a.UpdatedAt = utc(a.CreatedAt), utc(a.UpdatedAt)
	return a, nil
}

func getAssistant(ctx context.Context, q querier, tenant, id string, lock bool) (db.Assistant, error) {
	query := `SELECT ` + assistantCols + ` FROM trellis_assistants WHERE tenant = $1 AND assistant_id = $2`
	if lock {
		query += ` FOR UPDATE`
	}
	a, err := scanAssistant(q.QueryRow(ctx, query, tenant, id), tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Assistant{}, notFound("assistant", id, tenant)
	}
	if err != nil {
		return db.Assistant{}, wrap(err, "get assistant %q", id)
	}
	return a, nil
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
	err = d.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO trellis_assistants (tenant, `+assistantCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $9) ON CONFLICT DO NOTHING`,
			tenant, a.ID, a.GraphID, a.Name, a.Description, config, cctx, md, now)
		if err != nil {
			return wrap(err, "create assistant %q", a.ID)
		}
		if tag.RowsAffected() == 0 {
			if ifExists == db.IfExistsDoNothing {
				out, err = getAssistant(ctx, tx, tenant, a.ID, false)
				return err
			}
			return fmt.Errorf("server/db/postgres: assistant %q exists: %w", a.ID, db.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO trellis_assistant_versions
			(tenant, assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
			VALUES ($1, $2, 1, $3, $4, $5, $6, $7, $8, $9)`,
			tenant, a.ID, a.GraphID, a.Name, a.Description, config, cctx, md, now); err != nil {
			return wrap(err, "create assistant %q", a.ID)
		}
		out, err = getAssistant(ctx, tx, tenant, a.ID, false)
		return err
	})
	return out, err
}

// GetAssistant returns the assistant's latest version.
func (d *DB) GetAssistant(ctx context.Context, tenant, id string) (db.Assistant, error) {
	return getAssistant(ctx, d.pool, tenant, id, false)
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
	err = d.write(ctx, func(tx pgx.Tx) error {
		a, err := getAssistant(ctx, tx, tenant, id, true)
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
		if err := tx.QueryRow(ctx, `SELECT max(version) + 1 FROM trellis_assistant_versions WHERE tenant = $1 AND assistant_id = $2`,
			tenant, id).Scan(&version); err != nil {
			return wrap(err, "update assistant %q", id)
		}
		now := dbutil.Now()
		if _, err := tx.Exec(ctx, `INSERT INTO trellis_assistant_versions
			(tenant, assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			tenant, id, version, a.GraphID, a.Name, a.Description, []byte(a.Config), []byte(a.Context), md, now); err != nil {
			return wrap(err, "update assistant %q", id)
		}
		if _, err := tx.Exec(ctx, `UPDATE trellis_assistants SET graph_id = $1, name = $2, description = $3, config = $4,
			context = $5, metadata = $6, version = $7, updated_at = $8 WHERE tenant = $9 AND assistant_id = $10`,
			a.GraphID, a.Name, a.Description, []byte(a.Config), []byte(a.Context), md, version, now, tenant, id); err != nil {
			return wrap(err, "update assistant %q", id)
		}
		out, err = getAssistant(ctx, tx, tenant, id, false)
		return err
	})
	return out, err
}

// DeleteAssistant deletes the assistant with all its versions. Runs that
// name it are kept.
func (d *DB) DeleteAssistant(ctx context.Context, tenant, id string) error {
	tag, err := d.pool.Exec(ctx, `DELETE FROM trellis_assistants WHERE tenant = $1 AND assistant_id = $2`, tenant, id)
	if err != nil {
		return wrap(err, "delete assistant %q", id)
	}
	if tag.RowsAffected() == 0 {
		return notFound("assistant", id, tenant)
	}
	return nil
}

// args builds a positional argument list.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// assistantWhere builds the filter of q.
func assistantWhere(tenant string, q db.AssistantQuery) (string, args, error) {
	var a args
	where := ` WHERE tenant = ` + a.add(tenant)
	if q.GraphID != "" {
		where += ` AND graph_id = ` + a.add(q.GraphID)
	}
	if q.Name != "" {
		where += ` AND strpos(lower(name COLLATE "default"), lower(` + a.add(q.Name) + ` COLLATE "default")) > 0`
	}
	f, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return "", nil, err
	}
	if !f.Empty() {
		where += ` AND metadata @> ` + a.add(string(f.JSON())) + `::jsonb`
	}
	return where, a, nil
}

// SearchAssistants lists the tenant's assistants (latest versions) that
// match q: graph ID equal, name containing q.Name (case-insensitive),
// metadata containing q.Metadata (@>); sorted by q.SortBy (assistant_id,
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
	where, a, err := assistantWhere(tenant, q)
	if err != nil {
		return nil, err
	}
	query := `SELECT ` + assistantCols + ` FROM trellis_assistants` + where +
		` ORDER BY ` + col + ` ` + dir + `, assistant_id ` + dir + ` LIMIT ` + a.add(limit) + ` OFFSET ` + a.add(offset)
	rows, err := d.pool.Query(ctx, query, a...)
	if err != nil {
		return nil, wrap(err, "search assistants")
	}
	defer rows.Close()
	out := []db.Assistant{}
	for rows.Next() {
		as, err := scanAssistant(rows, tenant)
		if err != nil {
			return nil, err
		}
		out = append(out, as)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "search assistants")
	}
	return out, nil
}

// CountAssistants counts the assistants SearchAssistants would find
// without paging.
func (d *DB) CountAssistants(ctx context.Context, tenant string, q db.AssistantQuery) (int, error) {
	where, a, err := assistantWhere(tenant, q)
	if err != nil {
		return 0, err
	}
	var n int
	err = d.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_assistants`+where, a...).Scan(&n)
	return n, wrap(err, "count assistants")
}

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
	var a args
	query := `SELECT ` + versionCols + ` FROM trellis_assistant_versions WHERE tenant = ` + a.add(tenant) +
		` AND assistant_id = ` + a.add(id)
	if !f.Empty() {
		query += ` AND metadata @> ` + a.add(string(f.JSON())) + `::jsonb`
	}
	query += ` ORDER BY version ` + dir + ` LIMIT ` + a.add(limit) + ` OFFSET ` + a.add(offset)
	out := []db.Assistant{}
	err = d.read(ctx, func(tx pgx.Tx) error {
		if _, err := getAssistant(ctx, tx, tenant, id, false); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, query, a...)
		if err != nil {
			return wrap(err, "versions of assistant %q", id)
		}
		defer rows.Close()
		for rows.Next() {
			as, err := scanAssistant(rows, tenant)
			if err != nil {
				return err
			}
			out = append(out, as)
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
	err := d.write(ctx, func(tx pgx.Tx) error {
		if _, err := getAssistant(ctx, tx, tenant, id, true); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE trellis_assistants a SET graph_id = v.graph_id, name = v.name, description = v.description,
			config = v.config, context = v.context, metadata = v.metadata, version = v.version, updated_at = $1
			FROM trellis_assistant_versions v
			WHERE a.tenant = $2 AND a.assistant_id = $3 AND v.tenant = a.tenant AND v.assistant_id = a.assistant_id AND v.version = $4`,
			dbutil.Now(), tenant, id, version)
		if err != nil {
			return wrap(err, "set the latest version of assistant %q", id)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("server/db/postgres: assistant %q has no version %d: %w", id, version, db.ErrNotFound)
		}
		out, err = getAssistant(ctx, tx, tenant, id, false)
		return err
	})
	return out, err
}
