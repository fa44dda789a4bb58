package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/jsonmatch"
)

// TestMemoryClock drives Created, Updated and expiry with Memory's clock.
func TestMemoryClock(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	m.now = func() time.Time { return clock }
	ns := []string{"a", "b"}

	if err := m.Put(ctx, ns, "k", json.RawMessage(`1`), PutOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := m.Put(ctx, []string{"c"}, "gone", json.RawMessage(`1`), PutOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := m.Put(ctx, []string{"d"}, "gone", json.RawMessage(`1`), PutOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	clock = t0.Add(30 * time.Second)
	if err := m.Put(ctx, ns, "k", json.RawMessage(`2`), PutOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	it, err := m.Get(ctx, ns, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !it.Created.Equal(t0) || !it.Updated.Equal(clock) || !it.Expires.Equal(clock.Add(time.Minute)) {
		t.Errorf("item times = %v, %v, %v; want %v, %v, %v", it.Created, it.Updated, it.Expires, t0, clock, clock.Add(time.Minute))
	}
	// The items of "c" and "d" expired; Search and ListNamespaces skip and
	// remove them.
	if len(m.items) != 3 {
		t.Fatalf("%d items stored, want 3 before lazy removal", len(m.items))
	}
	nss, err := m.ListNamespaces(ctx, NamespaceQuery{})
	if err != nil || len(nss) != 1 || len(m.items) != 1 {
		t.Errorf("ListNamespaces = %q, %v with %d items stored; want [[a b]] and 1 item", nss, err, len(m.items))
	}

	// Expiry is exact: visible just before, gone at the instant.
	clock = it.Expires.Add(-time.Nanosecond)
	if _, err := m.Get(ctx, ns, "k"); err != nil {
		t.Errorf("Get just before expiry: %v", err)
	}
	clock = it.Expires
	if _, err := m.Get(ctx, ns, "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get at expiry: error = %v, want ErrNotFound", err)
	}
	if len(m.items) != 0 {
		t.Errorf("%d items stored after Get found the expired one, want 0", len(m.items))
	}
	// Put again after expiry: a new item.
	if err := m.Put(ctx, ns, "k", json.RawMessage(`3`), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if it, err := m.Get(ctx, ns, "k"); err != nil || !it.Created.Equal(clock) || !it.Expires.IsZero() {
		t.Errorf("item put after expiry = %+v, %v; want Created %v and no expiry", it, err, clock)
	}
}

func TestItemKeyDistinct(t *testing.T) {
	cases := [][2][]string{
		{{"a", "b"}, {"a|b"}},
		{{"a:b"}, {"a", "b"}},
		{{"1:a"}, {"a"}},
	}
	for _, c := range cases {
		if itemKey(c[0], "k") == itemKey(c[1], "k") {
			t.Errorf("namespaces %q and %q have the same key", c[0], c[1])
		}
	}
	if itemKey([]string{"a"}, "b|c") == itemKey([]string{"a", "b"}, "c") {
		t.Error("key and namespace elements collide")
	}
}

func TestJSONEqualNumbers(t *testing.T) {
	eq := func(a, b string) bool {
		va, err := jsonmatch.Decode([]byte(a))
		if err != nil {
			t.Fatal(err)
		}
		vb, err := jsonmatch.Decode([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		return jsonmatch.Equal(va, vb)
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`100`, `1e2`, true},
		{`-0`, `0`, true},
		{`0.1`, `0.10`, true},
		{`9007199254740993`, `9007199254740992`, false},
		{`1e999999999999`, `1e999999999999`, true},
		{`1`, `"1"`, false},
		{`[1,2]`, `[1.0,2.0]`, true},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`null`, `false`, false},
	} {
		if got := eq(c.a, c.b); got != c.want {
			t.Errorf("jsonmatch.Equal(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestParsePath(t *testing.T) {
	for p, ok := range map[string]bool{
		"$": true, "text": true, "a.b": true, "tags[*]": true, "a[0].b": true, "a[-1]": true, "m[0][1]": true,
		"": false, "a[": false, "a[x]": false, "a[0": false, ".a": false, "a..b": false, "a[0]b": false, "[0]": false,
	} {
		if err := ValidateFieldPath(p); (err == nil) != ok {
			t.Errorf("ValidateFieldPath(%q) = %v; want ok=%v", p, err, ok)
		}
	}
}

func TestIndexTexts(t *testing.T) {
	texts, err := IndexTexts([]byte(`{"a":{"b":"x"},"tags":["t1",{"n":1}],"n":null,"num":2}`), []string{"a.b", "tags[*]", "tags[-1].n", "n", "num", "missing", "$"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tx := range texts {
		got = append(got, tx.Path+"="+tx.Text)
	}
	want := []string{"a.b=x", "tags[0]=t1", `tags[1]={"n":1}`, "tags[1].n=1", "num=2", `$={"a":{"b":"x"},"n":null,"num":2,"tags":["t1",{"n":1}]}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("IndexTexts = %q;\nwant %q", got, want)
	}
}
