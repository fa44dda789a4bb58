package sqlstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/store"
)

func TestCheckPut(t *testing.T) {
	ctx := context.Background()
	ns := []string{"users", "u1"}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		ns    []string
		key   string
		value string
		ttl   time.Duration
		want  string
	}{
		{"ok", ctx, ns, "k", `{"a":1}`, time.Minute, ""},
		{"canceled", canceled, ns, "k", `{}`, 0, "context canceled"},
		{"empty key", ctx, ns, "", `{}`, 0, "key"},
		{"not JSON", ctx, ns, "k", `{a`, 0, "store: put users/u1/k: value is not valid JSON"},
		{"negative TTL", ctx, ns, "k", `{}`, -time.Second, "store: put users/u1/k: negative TTL -1s"},
		{"too large", ctx, ns, "k", `"` + strings.Repeat("x", 64) + `"`, 0, "put"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPut(tc.ctx, tc.ns, tc.key, []byte(tc.value), store.PutOptions{TTL: tc.ttl}, 32)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckPut = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckPut = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckImport(t *testing.T) {
	good := &store.Item{Namespace: []string{"a"}, Key: "k", Value: []byte(`1`)}
	bad := &store.Item{Namespace: []string{"a"}, Key: "j", Value: []byte(`nope`)}
	if err := CheckImport(context.Background(), []*store.Item{good}); err != nil {
		t.Fatalf("CheckImport(good) = %v", err)
	}
	err := CheckImport(context.Background(), []*store.Item{good, bad})
	if err == nil || !strings.Contains(err.Error(), "store: import a/j: value is not valid JSON") {
		t.Fatalf("CheckImport(bad) = %v", err)
	}
}

func TestCheckSearch(t *testing.T) {
	ctx := context.Background()
	if limit, err := CheckSearch(ctx, []string{"a"}, store.Query{}, false); err != nil || limit != 10 {
		t.Errorf("default page: %d, %v; want 10, nil", limit, err)
	}
	if limit, err := CheckSearch(ctx, nil, store.Query{Limit: 3}, false); err != nil || limit != 3 {
		t.Errorf("limit 3: %d, %v; want 3, nil", limit, err)
	}
	if _, err := CheckSearch(ctx, nil, store.Query{Offset: -1}, false); err == nil || !strings.Contains(err.Error(), "negative limit 0 or offset -1") {
		t.Errorf("negative offset: %v", err)
	}
	if _, err := CheckSearch(ctx, nil, store.Query{Text: "x"}, false); !errors.Is(err, store.ErrNoIndex) {
		t.Errorf("text without an index: %v; want store.ErrNoIndex", err)
	}
	if _, err := CheckSearch(ctx, []string{""}, store.Query{}, true); err == nil {
		t.Error("an empty prefix element passed")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := CheckSearch(done, nil, store.Query{}, true); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: %v", err)
	}
}
