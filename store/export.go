package store

import "context"

// Exporter is an optional interface of a Store whose items can be copied,
// with their times, to another Store (`trellis transfer`). The SQLite and
// PostgreSQL stores implement it; the conformance suite checks every Store
// that does.
type Exporter interface {
	// ExportItems returns up to limit live items in the store's own order
	// (stable, by namespace then key, though not necessarily Search's),
	// those after the item after names (nil from the first). limit must
	// be positive.
	ExportItems(ctx context.Context, after *Item, limit int) ([]*Item, error)
	// ImportItems stores items keeping their Created, Updated and Expires
	// times. An item whose namespace and key the store holds already
	// (live or not yet swept) is left as it is, so importing twice changes
	// nothing. It reports how many items it stored.
	ImportItems(ctx context.Context, items []*Item) (int, error)
}
