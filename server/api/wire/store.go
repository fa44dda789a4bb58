package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// Store items live in namespaces: lists of labels. A label may not contain
// "." (GET /store/items joins them with dots) and may not be empty.

func namespaceErrors(ptr string, ns []string, required bool) []FieldError {
	if required && len(ns) == 0 {
		return []FieldError{{Pointer: ptr, Detail: "must list at least one label"}}
	}
	var errs []FieldError
	for i, l := range ns {
		if l == "" || strings.Contains(l, ".") {
			errs = append(errs, FieldError{Pointer: ptr + "/" + strconv.Itoa(i), Detail: fmt.Sprintf("%q is not a namespace label: labels are non-empty and contain no \".\"", l)})
		}
	}
	return errs
}

// StorePut is the body of PUT /store/items (answered with 204).
type StorePut struct {
	// Namespace is where the item lives. Required.
	Namespace []string `json:"namespace"`
	// Key names the item in its namespace. Required.
	Key string `json:"key"`
	// Value is the item (an object). Required.
	Value map[string]any `json:"value"`
	// Index is the search-index setting: false stores the item without
	// embedding it, a list of field paths embeds those instead of the
	// store's fields. Ignored by a server without store.index.
	Index *StoreIndex `json:"index,omitempty"`
	// TTL is the item's time to live in minutes; accepted and ignored.
	TTL *float64 `json:"ttl,omitempty"`
}

// Validate checks namespace, key and value.
func (b *StorePut) Validate() []FieldError {
	errs := namespaceErrors("/namespace", b.Namespace, true)
	errs = append(errs, nonEmpty("/key", b.Key, "the item's key")...)
	if b.Value == nil {
		errs = append(errs, FieldError{Pointer: "/value", Detail: "must be an object (to remove an item, DELETE /store/items)"})
	}
	if b.TTL != nil && *b.TTL <= 0 {
		errs = append(errs, FieldError{Pointer: "/ttl", Detail: "must be more than 0 minutes, or null for none"})
	}
	return errs
}

// StoreDelete is the body of DELETE /store/items (answered with 204).
type StoreDelete struct {
	Namespace []string `json:"namespace,omitempty"`
	// Key names the item. Required.
	Key string `json:"key"`
}

// Validate checks namespace and key.
func (b *StoreDelete) Validate() []FieldError {
	return append(namespaceErrors("/namespace", b.Namespace, false), nonEmpty("/key", b.Key, "the item's key")...)
}

// StoreGetQuery is the query of GET /store/items.
type StoreGetQuery struct {
	// Namespace is the labels joined with ".".
	Namespace string `json:"namespace,omitempty"`
	// Key names the item. Required.
	Key string `json:"key"`
	// RefreshTTL is accepted and ignored.
	RefreshTTL bool `json:"refresh_ttl,omitempty"`
}

// Validate checks the key.
func (q *StoreGetQuery) Validate() []FieldError { return nonEmpty("/key", q.Key, "the item's key") }

// Labels is the namespace as a list ([] for "").
func (q *StoreGetQuery) Labels() []string {
	if q.Namespace == "" {
		return []string{}
	}
	return strings.Split(q.Namespace, ".")
}

// StoreSearch is the body of POST /store/items/search.
type StoreSearch struct {
	// NamespacePrefix limits the search to namespaces starting with it.
	NamespacePrefix []string `json:"namespace_prefix,omitempty"`
	// Filter keeps items whose value contains these members.
	Filter map[string]any `json:"filter,omitempty"`
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit *int `json:"limit,omitempty"`
	// Offset skips this many results.
	Offset int `json:"offset,omitempty"`
	// Query is a natural-language query. With store.index configured the
	// items are ranked by similarity to it (best first, each with its
	// score); without, it is a case-insensitive substring match on the
	// value.
	Query string `json:"query,omitempty"`
	// RefreshTTL is accepted and ignored.
	RefreshTTL *bool `json:"refresh_ttl,omitempty"`
}

// Validate checks the prefix, limit and offset.
func (b *StoreSearch) Validate() []FieldError {
	return append(namespaceErrors("/namespace_prefix", b.NamespacePrefix, false), pageErrors("", b.Limit, b.Offset)...)
}

// StoreListNamespaces is the body of POST /store/namespaces.
type StoreListNamespaces struct {
	// Prefix and Suffix keep namespaces that start or end with these labels.
	Prefix []string `json:"prefix,omitempty"`
	Suffix []string `json:"suffix,omitempty"`
	// MaxDepth truncates namespaces to this many labels.
	MaxDepth *int `json:"max_depth,omitempty"`
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit *int `json:"limit,omitempty"`
	// Offset skips this many results.
	Offset int `json:"offset,omitempty"`
}

// Validate checks the bounds.
func (b *StoreListNamespaces) Validate() []FieldError {
	errs := pageErrors("", b.Limit, b.Offset)
	if b.MaxDepth != nil && *b.MaxDepth < 1 {
		errs = append(errs, FieldError{Pointer: "/max_depth", Detail: fmt.Sprintf("must be 1 or more, not %d", *b.MaxDepth)})
	}
	return errs
}

// Item is a store item as responses show it.
type Item struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	CreatedAt Time           `json:"created_at"`
	UpdatedAt Time           `json:"updated_at"`
	// Score is the search relevance (search results only).
	Score *float64 `json:"score,omitempty"`
}

// StoreSearchResult is the answer of POST /store/items/search.
type StoreSearchResult struct {
	Items []Item `json:"items"`
}

// StoreNamespaces is the answer of POST /store/namespaces.
type StoreNamespaces struct {
	Namespaces [][]string `json:"namespaces"`
}
