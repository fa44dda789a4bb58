package server

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/embedtest"
)

func putItem(t *testing.T, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url+"/store/items", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("PUT /store/items %s: %d", body, resp.StatusCode)
	}
}

func searchItems(t *testing.T, url, body string) []wire.Item {
	t.Helper()
	code, out, _ := post(t, url+"/store/items/search", body)
	if code != 200 {
		t.Fatalf("search %s: %d %s", body, code, out)
	}
	var res wire.StoreSearchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	return res.Items
}

// With Config.StoreIndex the store API's query ranks by similarity and
// carries scores, LangGraph's index setting of a put is honoured, and
// prefix and filter still apply.
func TestStoreSemanticSearchOverHTTP(t *testing.T) {
	r := start(t, Config{
		Database:   filepath.Join(t.TempDir(), "t.db"),
		StoreIndex: &store.IndexConfig{Embedder: embedtest.New(64), Fields: []string{"text"}},
	}, nil)
	putItem(t, r.url, `{"namespace":["memories","ann"],"key":"1","value":{"text":"Ann likes Italian food, pasta above all","kind":"food"}}`)
	putItem(t, r.url, `{"namespace":["memories","ann"],"key":"2","value":{"text":"Ann works as a nurse on night shifts","kind":"work"}}`)
	putItem(t, r.url, `{"namespace":["memories","bob"],"key":"1","value":{"text":"Bob likes sushi and Japanese food","kind":"food"}}`)
	putItem(t, r.url, `{"namespace":["memories","ann"],"key":"3","value":{"text":"Ann likes food trucks"},"index":false}`)
	putItem(t, r.url, `{"namespace":["memories","ann"],"key":"4","value":{"title":"weekend food plans","text":"none"},"index":["title"]}`)

	items := searchItems(t, r.url, `{"namespace_prefix":["memories","ann"],"query":"what food does Ann like?","limit":3}`)
	if len(items) != 3 || items[0].Key != "1" || items[0].Score == nil {
		t.Fatalf("ranked results %+v; want item 1 first, with a score", items)
	}
	for i, it := range items {
		if it.Key == "3" {
			t.Errorf("result %d is item 3, stored with index false", i)
		}
		if i > 0 && *it.Score > *items[i-1].Score {
			t.Errorf("scores not decreasing: %v then %v", *items[i-1].Score, *it.Score)
		}
	}
	// The per-put fields: item 4 is found by its title.
	items = searchItems(t, r.url, `{"namespace_prefix":["memories","ann"],"query":"weekend plans","limit":1}`)
	if len(items) != 1 || items[0].Key != "4" {
		t.Errorf("query on a per-put field: %+v; want item 4", items)
	}
	// Filter and the whole store.
	items = searchItems(t, r.url, `{"namespace_prefix":["memories"],"query":"food","filter":{"kind":"food"}}`)
	if len(items) != 2 {
		t.Errorf("query with a filter: %d items; want ann/1 and bob/1", len(items))
	}
	if code, body, _ := post(t, r.url+"/store/items/search", `{"query":"x","offset":10000}`); code != 422 || !strings.Contains(body, "/offset") {
		t.Errorf("a query paging past the ranking bound: %d %s; want 422 at /offset", code, body)
	}
	req, _ := http.NewRequest(http.MethodPut, r.url+"/store/items", strings.NewReader(`{"namespace":["a"],"key":"k","value":{},"index":["a[x]"]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 422 {
		t.Errorf("a put with a malformed index path: %d; want 422", resp.StatusCode)
	}
}

// Without an index a query stays a substring match, without scores.
func TestStoreQueryWithoutIndexIsSubstring(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db")}, nil)
	putItem(t, r.url, `{"namespace":["m"],"key":"1","value":{"text":"likes Pasta"}}`)
	putItem(t, r.url, `{"namespace":["m"],"key":"2","value":{"text":"likes sushi"}}`)
	items := searchItems(t, r.url, `{"query":"pasta"}`)
	if len(items) != 1 || items[0].Key != "1" || items[0].Score != nil {
		t.Errorf("substring query: %+v", items)
	}
}
