package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/trellis-agents/trellis/internal/jsonmatch"

	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/internal/sqlstore"
)

// Search returns copies of the live items whose namespace starts with the
// elements of prefix (an empty prefix matches every namespace) and whose
// value is a JSON object with every field of q.Filter equal to the filter's
// value, compared as JSON (1 equals 1.0, "1" does not equal 1, objects and
// arrays compare element by element). Items are ordered by namespace,
// element by element, then by key; q.Offset of them are skipped and at most
// q.Limit (10 when 0) returned.
func (s *Store) Search(ctx context.Context, prefix []string, q store.Query) ([]*store.Item, error) {
	limit, err := sqlstore.CheckSearch(ctx, prefix, q, s.index != nil)
	if err != nil {
		return nil, err
	}
	filter := make(map[string]any, len(q.Filter))
	for field, v := range q.Filter {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("store: search: filter field %q: %w", field, err)
		}
		if filter[field], err = jsonmatch.Decode(b); err != nil {
			return nil, fmt.Errorf("store: search: filter field %q: %w", field, err)
		}
	}

	if q.Text != "" {
		return s.searchText(ctx, prefix, q, filter, limit)
	}
	where, args := liveInPrefix("", prefix, unixNano(s.now()))
	query := qItem + where + ` ORDER BY ns, key`
	if len(filter) == 0 {
		// Without a filter SQL pages; with one, Go skips and stops.
		query += ` LIMIT ? OFFSET ?`
		args = append(args, limit, q.Offset)
	}
	rows, err := s.db.Read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search %q: %w", prefix, err)
	}
	defer rows.Close()
	out := []*store.Item{}
	skip := q.Offset
	for len(out) < limit && rows.Next() {
		it, _, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("store: search %q: %w", prefix, err)
		}
		if err := store.CheckValueSize("read", it.Namespace, it.Key, len(it.Value), s.maxBytes); err != nil {
			return nil, fmt.Errorf("store: search %q: %w", prefix, err)
		}
		if len(filter) > 0 {
			if !jsonmatch.Matches(it.Value, filter) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search %q: %w", prefix, err)
	}
	return out, nil
}

// ListNamespaces returns the distinct namespaces that hold live items and
// start with q.Prefix, each cut to q.MaxDepth elements when that is set
// (duplicates left by the cut are merged). They are sorted element by
// element (["a"] < ["a" "b"] < ["a-b"]); q.Offset of them are skipped and at
// most q.Limit (100 when 0) returned.
func (s *Store) ListNamespaces(ctx context.Context, q store.NamespaceQuery) ([][]string, error) {
	if err := sqlstore.CheckNamespaceQuery(ctx, q); err != nil {
		return nil, err
	}
	limit := cmp.Or(q.Limit, 100)
	where, args := liveInPrefix("", q.Prefix, unixNano(s.now()))
	rows, err := s.db.Read.QueryContext(ctx, `SELECT DISTINCT ns FROM store_items`+where+` ORDER BY ns`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	defer rows.Close()
	// Cutting sorted namespaces keeps them sorted, so the duplicates a cut
	// makes are neighbours.
	out := [][]string{}
	var last []string
	skip := q.Offset
	for len(out) < limit && rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("store: list namespaces: %w", err)
		}
		ns, err := decodeNamespace(raw)
		if err != nil {
			return nil, fmt.Errorf("store: list namespaces: %w", err)
		}
		if q.MaxDepth > 0 && len(ns) > q.MaxDepth {
			ns = ns[:q.MaxDepth]
		}
		if last != nil && slices.Equal(ns, last) {
			continue
		}
		last = ns
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, slices.Clone(ns))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	return out, nil
}

// liveInPrefix returns the WHERE clause and arguments that select the items
// live at now whose namespace starts with prefix; alias qualifies the
// columns ("i." for a join, "" otherwise).
func liveInPrefix(alias string, prefix []string, now int64) (string, []any) {
	where, args := ` WHERE (`+alias+`expires IS NULL OR `+alias+`expires > ?)`, []any{now}
	if len(prefix) > 0 {
		lo := encodeNamespace(prefix)
		// Every encoding starting with lo sorts before lo with its final
		// terminator (0x00) raised to 0x01, and nothing else between.
		hi := bytes.Clone(lo)
		hi[len(hi)-1] = 0x01
		where += ` AND ` + alias + `ns >= ? AND ` + alias + `ns < ?`
		args = append(args, lo, hi)
	}
	return where, args
}

// encodeNamespace encodes a namespace so that comparing encodings as bytes
// compares namespaces element by element: each element is followed by 0x00,
// and its bytes 0x00 and 0x01 become 0x01 0x01 and 0x01 0x02, so the
// terminator sorts before every byte of an element.
func encodeNamespace(namespace []string) []byte {
	n := 0
	for _, e := range namespace {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	for _, e := range namespace {
		for i := 0; i < len(e); i++ {
			switch c := e[i]; c {
			case 0x00, 0x01:
				out = append(out, 0x01, c+1)
			default:
				out = append(out, c)
			}
		}
		out = append(out, 0x00)
	}
	return out
}

var errBadNamespace = errors.New("stored namespace is not a valid encoding")

// decodeNamespace reverses encodeNamespace.
func decodeNamespace(b []byte) ([]string, error) {
	var out []string
	var elem []byte
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case 0x00:
			out = append(out, string(elem))
			elem = elem[:0]
		case 0x01:
			if i+1 == len(b) || (b[i+1] != 0x01 && b[i+1] != 0x02) {
				return nil, fmt.Errorf("%w: %q", errBadNamespace, b)
			}
			i++
			elem = append(elem, b[i]-1)
		default:
			elem = append(elem, c)
		}
	}
	if len(elem) > 0 || len(out) == 0 {
		return nil, fmt.Errorf("%w: %q", errBadNamespace, b)
	}
	return out, nil
}
