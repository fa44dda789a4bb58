package server

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/embedtest"
)

// The SDK's store.searchItems with a query gets similarity-ranked items
// with scores from a server with a semantic index, and putItem's index
// option (false, or other fields) is honoured.
func TestSDKStoreSemanticSearch(t *testing.T) {
	dir := sdkDir(t)
	r := start(t, Config{
		Database:   filepath.Join(t.TempDir(), "t.db"),
		StoreIndex: &store.IndexConfig{Embedder: embedtest.New(256), Fields: []string{"text"}},
	}, nil)
	cmd := exec.Command("node", filepath.Join("testdata", "sdkstore.mjs"), dir, r.url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got struct {
		Found []struct {
			Key       string   `json:"key"`
			Score     *float64 `json:"score"`
			Namespace []string `json:"namespace"`
		} `json:"found"`
		Plans []string `json:"plans"`
		All   []string `json:"all"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(got.Found) != 3 || got.Found[0].Key != "food" || got.Found[0].Score == nil || !slices.Equal(got.Found[0].Namespace, []string{"memories", "ann"}) {
		t.Fatalf("searchItems with a query = %s; want food first, with a score", out)
	}
	for i, f := range got.Found {
		if f.Key == "trucks" {
			t.Errorf("result %d is the item put with index: false", i)
		}
		if i > 0 && *f.Score > *got.Found[i-1].Score {
			t.Errorf("scores not decreasing: %s", out)
		}
	}
	if !slices.Equal(got.Plans, []string{"plans"}) {
		t.Errorf("a query on the per-put index field found %v; want plans", got.Plans)
	}
	if len(got.All) != 4 {
		t.Errorf("a search without a query found %v; want all four items", got.All)
	}
}
