package api

import (
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/api/wire"
)

func TestStoreRoutes(t *testing.T) {
	e := newResEnv(t, true)
	put := func(ns []string, key string, v map[string]any, hdr ...string) {
		t.Helper()
		e.must(204, nil, "PUT", "/store/items", map[string]any{"namespace": ns, "key": key, "value": v}, hdr...)
	}
	put([]string{"users", "ann"}, "prefs", map[string]any{"colour": "red", "food": "Pasta al forno"})
	put([]string{"users", "bob"}, "prefs", map[string]any{"colour": "blue"})
	put([]string{"docs"}, "readme", map[string]any{"text": "hello"})

	var it wire.Item
	e.must(200, &it, "GET", "/store/items?namespace=users.ann&key=prefs", nil)
	if it.Key != "prefs" || len(it.Namespace) != 2 || it.Namespace[1] != "ann" || it.Value["colour"] != "red" || it.CreatedAt.IsZero() {
		t.Fatalf("item %+v", it)
	}
	// A missing item is 200 null, as LangGraph answers (the SDK's getItem
	// returns null for it).
	if status, body := e.do("GET", "/store/items?namespace=users.ann&key=nope", nil); status != 200 || strings.TrimSpace(string(body)) != "null" {
		t.Fatalf("missing item: %d %s, want 200 null", status, body)
	}
	e.problem(422, "key", "GET", "/store/items?namespace=users.ann", nil)
	e.problem(422, "namespace", "GET", "/store/items?namespace=users..ann&key=prefs", nil)
	e.problem(422, "/value", "PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k"})
	e.problem(422, "/namespace/0", "PUT", "/store/items", map[string]any{"namespace": []string{"a.b"}, "key": "k", "value": map[string]any{}})
	e.problem(422, "/namespace", "PUT", "/store/items", map[string]any{"namespace": []string{}, "key": "k", "value": map[string]any{}})

	// Search: prefix, filter, query, paging.
	var res wire.StoreSearchResult
	e.must(200, &res, "POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"users"}})
	if len(res.Items) != 2 {
		t.Fatalf("search users: %d items", len(res.Items))
	}
	e.must(200, &res, "POST", "/store/items/search", map[string]any{"filter": map[string]any{"colour": "blue"}})
	if len(res.Items) != 1 || res.Items[0].Namespace[1] != "bob" {
		t.Fatalf("search by filter: %+v", res.Items)
	}
	e.must(200, &res, "POST", "/store/items/search", map[string]any{"query": "pasta"})
	if len(res.Items) != 1 || res.Items[0].Namespace[1] != "ann" {
		t.Fatalf("search by query: %+v", res.Items)
	}
	e.must(200, &res, "POST", "/store/items/search", map[string]any{"limit": 1, "offset": 1})
	if len(res.Items) != 1 {
		t.Fatalf("a page of one: %d items", len(res.Items))
	}
	e.problem(422, "/limit", "POST", "/store/items/search", map[string]any{"limit": 0})

	// Namespaces: prefix, suffix, depth.
	var nss wire.StoreNamespaces
	e.must(200, &nss, "POST", "/store/namespaces", map[string]any{})
	if len(nss.Namespaces) != 3 {
		t.Fatalf("namespaces %v", nss.Namespaces)
	}
	e.must(200, &nss, "POST", "/store/namespaces", map[string]any{"max_depth": 1})
	if len(nss.Namespaces) != 2 || len(nss.Namespaces[0]) != 1 {
		t.Fatalf("namespaces at depth 1: %v", nss.Namespaces)
	}
	e.must(200, &nss, "POST", "/store/namespaces", map[string]any{"suffix": []string{"bob"}})
	if len(nss.Namespaces) != 1 || nss.Namespaces[0][0] != "users" {
		t.Fatalf("namespaces ending in bob: %v", nss.Namespaces)
	}
	e.must(200, &nss, "POST", "/store/namespaces", map[string]any{"prefix": []string{"users"}, "limit": 1})
	if len(nss.Namespaces) != 1 {
		t.Fatalf("one namespace under users: %v", nss.Namespaces)
	}
	e.problem(422, "/max_depth", "POST", "/store/namespaces", map[string]any{"max_depth": 0})

	// Tenant isolation: the other tenant sees none of it.
	o := []string{resTenantHeader, "other"}
	if status, body := e.do("GET", "/store/items?namespace=users.ann&key=prefs", nil, o...); status != 200 || strings.TrimSpace(string(body)) != "null" {
		t.Fatalf("another tenant's item: %d %s, want 200 null", status, body)
	}
	e.must(200, &res, "POST", "/store/items/search", map[string]any{}, o...)
	if len(res.Items) != 0 {
		t.Fatalf("other tenant sees %d items", len(res.Items))
	}
	e.must(200, &nss, "POST", "/store/namespaces", map[string]any{}, o...)
	if len(nss.Namespaces) != 0 {
		t.Fatalf("other tenant sees namespaces %v", nss.Namespaces)
	}

	// Delete.
	e.must(204, nil, "DELETE", "/store/items", map[string]any{"namespace": []string{"users", "ann"}, "key": "prefs"})
	if status, body := e.do("GET", "/store/items?namespace=users.ann&key=prefs", nil); status != 200 || strings.TrimSpace(string(body)) != "null" {
		t.Fatalf("a deleted item: %d %s, want 200 null", status, body)
	}
	e.must(204, nil, "DELETE", "/store/items", map[string]any{"namespace": []string{"users", "ann"}, "key": "prefs"})
	e.problem(422, "/key", "DELETE", "/store/items", map[string]any{"namespace": []string{"users"}})
}

func TestStoreRoutesWithoutStore(t *testing.T) {
	e := newResEnv(t, false)
	e.problem(404, "", "PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{}})
	e.problem(404, "", "GET", "/store/items?key=k", nil)
	e.problem(404, "", "DELETE", "/store/items", map[string]any{"key": "k"})
	e.problem(404, "", "POST", "/store/items/search", map[string]any{})
	p := e.problem(404, "", "POST", "/store/namespaces", map[string]any{})
	if p.Detail == "" || p.Instance != "/store/namespaces" {
		t.Fatalf("problem %+v", p)
	}
}
