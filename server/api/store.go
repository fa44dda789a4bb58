package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/store"
)

// storeHandlers returns the handlers of the long-term store routes. The
// store is shared by every tenant's runs through graph.WithStore, so each
// tenant's items live under its own first namespace label, which the API
// adds and strips: a tenant never sees another's items.
func (a *API) storeHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"putStoreItem":        http.HandlerFunc(a.putStoreItem),
		"getStoreItem":        http.HandlerFunc(a.getStoreItem),
		"deleteStoreItem":     http.HandlerFunc(a.deleteStoreItem),
		"searchStoreItems":    http.HandlerFunc(a.searchStoreItems),
		"listStoreNamespaces": http.HandlerFunc(a.listStoreNamespaces),
	}
}

// noStore answers the store routes of a server without a store.
func (a *API) noStore(w http.ResponseWriter, r *http.Request) bool {
	if a.Store != nil {
		return false
	}
	wire.NewProblem(http.StatusNotFound, "this server has no long-term store configured; start it with a store to use /store").Write(w, r)
	return true
}

// tenantStore is the request's tenant's part of the store, the same view
// its runs get (runs.TenantStore): namespaces are shown without the
// tenant's label.
func (a *API) tenantStore(r *http.Request) store.Store {
	return runs.TenantStore(a.Store, a.tenant(r))
}

func storeItem(it *store.Item) (wire.Item, error) {
	var v map[string]any
	if err := json.Unmarshal(it.Value, &v); err != nil {
		return wire.Item{}, err
	}
	ns := it.Namespace
	if ns == nil {
		ns = []string{}
	}
	return wire.Item{Namespace: ns, Key: it.Key, Value: v, CreatedAt: it.Created.UTC(), UpdatedAt: it.Updated.UTC(), Score: it.Score}, nil
}

func (a *API) putStoreItem(w http.ResponseWriter, r *http.Request) {
	if a.noStore(w, r) {
		return
	}
	b, ok := decodeBody[wire.StorePut](a, w, r)
	if !ok {
		return
	}
	v, err := json.Marshal(b.Value)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var opts store.PutOptions
	if b.Index != nil {
		// LangGraph's per-put index: false, or the fields to embed
		// instead of the store's. A store without an index ignores it.
		opts.NoIndex = b.Index.Disabled
		if !b.Index.Disabled {
			opts.Index = b.Index.Fields
		}
		for i, f := range opts.Index {
			if err := store.ValidateFieldPath(f); err != nil {
				wire.Invalid(wire.FieldError{Pointer: "/index/" + strconv.Itoa(i), Detail: err.Error()}).Write(w, r)
				return
			}
		}
	}
	if err := a.tenantStore(r).Put(r.Context(), b.Namespace, b.Key, v, opts); err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusNoContent, nil)
}

func (a *API) getStoreItem(w http.ResponseWriter, r *http.Request) {
	if a.noStore(w, r) {
		return
	}
	q, ok := decodeQuery[wire.StoreGetQuery](w, r)
	if !ok {
		return
	}
	labels := q.Labels()
	for _, l := range labels {
		if l == "" {
			wire.Invalid(wire.FieldError{Parameter: "namespace", Detail: "has an empty label; labels are joined with single dots"}).Write(w, r)
			return
		}
	}
	it, err := a.tenantStore(r).Get(r.Context(), labels, q.Key)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// As LangGraph's server: 200 with null, which the SDK's
			// getItem returns as null.
			wire.WriteJSON(w, r, http.StatusOK, nil)
			return
		}
		a.fail(w, r, err)
		return
	}
	out, err := storeItem(it)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) deleteStoreItem(w http.ResponseWriter, r *http.Request) {
	if a.noStore(w, r) {
		return
	}
	b, ok := decodeBody[wire.StoreDelete](a, w, r)
	if !ok {
		return
	}
	if err := a.tenantStore(r).Delete(r.Context(), b.Namespace, b.Key); err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusNoContent, nil)
}

func (a *API) searchStoreItems(w http.ResponseWriter, r *http.Request) {
	if a.noStore(w, r) {
		return
	}
	b, ok := decodeBody[wire.StoreSearch](a, w, r)
	if !ok {
		return
	}
	limit := wire.LimitOr(b.Limit, wire.DefaultLimit)
	if b.Query != "" && b.Offset+limit > store.MaxRanked {
		wire.Invalid(wire.FieldError{Pointer: "/offset", Detail: "a query ranks at most " + strconv.Itoa(store.MaxRanked) + " items: offset + limit must not exceed it; narrow namespace_prefix or filter instead"}).Write(w, r)
		return
	}
	q := store.Query{Filter: b.Filter, Limit: limit, Offset: b.Offset, Text: b.Query}
	items, err := a.tenantStore(r).Search(r.Context(), b.NamespacePrefix, q)
	substring := false
	if errors.Is(err, store.ErrNoIndex) {
		// No vector index: the query is a substring match, applied after
		// the store's own filter, so page through everything it keeps.
		substring = true
		q.Text, q.Limit, q.Offset = "", wire.MaxLimit*10, 0
		items, err = a.tenantStore(r).Search(r.Context(), b.NamespacePrefix, q)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := wire.StoreSearchResult{Items: []wire.Item{}}
	skip := 0
	for _, it := range items {
		if substring {
			if !strings.Contains(strings.ToLower(string(it.Value)), strings.ToLower(b.Query)) {
				continue
			}
			if skip < b.Offset {
				skip++
				continue
			}
			if len(out.Items) == limit {
				break
			}
		}
		wi, err := storeItem(it)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		out.Items = append(out.Items, wi)
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) listStoreNamespaces(w http.ResponseWriter, r *http.Request) {
	if a.noStore(w, r) {
		return
	}
	b, ok := decodeBody[wire.StoreListNamespaces](a, w, r)
	if !ok {
		return
	}
	limit := wire.LimitOr(b.Limit, wire.DefaultLimit)
	q := store.NamespaceQuery{Prefix: b.Prefix}
	if b.MaxDepth != nil {
		q.MaxDepth = *b.MaxDepth
	}
	// Suffix is filtered here, so page after it.
	q.Limit = wire.MaxLimit * 10
	nss, err := a.tenantStore(r).ListNamespaces(r.Context(), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := wire.StoreNamespaces{Namespaces: [][]string{}}
	skip := 0
	for _, ns := range nss {
		if !hasSuffix(ns, b.Suffix) {
			continue
		}
		if skip < b.Offset {
			skip++
			continue
		}
		if len(out.Namespaces) == limit {
			break
		}
		out.Namespaces = append(out.Namespaces, ns)
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func hasSuffix(ns, suffix []string) bool {
	if len(suffix) > len(ns) {
		return false
	}
	for i := range suffix {
		if ns[len(ns)-len(suffix)+i] != suffix[i] {
			return false
		}
	}
	return true
}
