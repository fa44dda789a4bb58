package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/store"
	stpg "github.com/trellis-agents/trellis/store/postgres"
	stsqlite "github.com/trellis-agents/trellis/store/sqlite"
)

// randomEmbedder gives every text a pseudo-random unit-free vector seeded
// by the text, so a store can be filled without a model.
type randomEmbedder struct{ dims int }

func (e randomEmbedder) Dims() int { return e.dims }

func (e randomEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		r := rand.New(rand.NewPCG(h.Sum64(), 1))
		v := make([]float32, e.dims)
		for j := range v {
			v[j] = r.Float32()*2 - 1
		}
		out[i] = v
	}
	return out, nil
}

const semanticDims = 256

// BenchmarkSemanticSearch is one exact top-10 query over n indexed items
// of 256 dimensions: the store reads every vector under the prefix,
// scores it and keeps the best ten in a heap. Filling the store is not
// timed. 100k items run when TRELLIS_BENCH_LARGE is set; PostgreSQL runs
// at 10k when TRELLIS_TEST_PG_DSN is set.
func BenchmarkSemanticSearch(b *testing.B) {
	cfg := store.IndexConfig{Embedder: randomEmbedder{semanticDims}, Fields: []string{"text"}}
	type backend struct {
		name  string
		sizes []int
		open  func(b *testing.B) store.Store
	}
	// 100k items take a while to put (one transaction each on SQLite):
	// the one-iteration pass of CI runs 10k only.
	sizes := []int{10_000}
	if os.Getenv("TRELLIS_BENCH_LARGE") != "" {
		sizes = append(sizes, 100_000)
	}
	backends := []backend{
		{"memory", sizes, func(*testing.B) store.Store { return store.NewMemory(store.MemoryIndex(cfg)) }},
		{"sqlite", sizes, func(b *testing.B) store.Store {
			s, err := stsqlite.Open(context.Background(), filepath.Join(b.TempDir(), "store.db"), stsqlite.WithIndex(cfg))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	if os.Getenv("TRELLIS_TEST_PG_DSN") != "" {
		backends = append(backends, backend{"postgres", []int{10_000}, func(b *testing.B) store.Store {
			dsn, schema := pgdbtest.Schema(b)
			s, err := stpg.Open(context.Background(), dsn, stpg.WithSchema(schema), stpg.WithIndex(cfg))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(s.Close)
			return s
		}})
	}
	ctx := context.Background()
	for _, be := range backends {
		for _, n := range be.sizes {
			b.Run(fmt.Sprintf("%s/%dk", be.name, n/1000), func(b *testing.B) {
				s := be.open(b)
				for i := range n {
					v, _ := json.Marshal(map[string]string{"text": fmt.Sprint("item ", i)})
					if err := s.Put(ctx, []string{"bench", fmt.Sprint("u", i%100)}, fmt.Sprint(i), v, store.PutOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				q := 0
				for b.Loop() {
					q++
					items, err := s.Search(ctx, []string{"bench"}, store.Query{Text: fmt.Sprint("query ", q), Limit: 10})
					if err != nil {
						b.Fatal(err)
					}
					if len(items) != 10 || *items[0].Score < *items[9].Score {
						b.Fatalf("query returned %d items, not ranked", len(items))
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
			})
		}
	}
}
