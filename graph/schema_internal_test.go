package graph

import (
	"fmt"
	"testing"
)

// TestSchemaSlotOf checks the dense key index against the map it stands
// in for: keys declared together, keys far apart (the map serves), and ids
// that are not in the schema, inside and outside the dense range.
func TestSchemaSlotOf(t *testing.T) {
	a, b := NewKey[int]("a"), NewKey[string]("b")
	for range maxDense {
		NewKey[int]("filler") // pushes the next key's id past the dense span
	}
	far := NewKey[int]("far")
	between := NewKey[int]("between") // not in either schema
	for _, c := range []struct {
		keys  []AnyKey
		dense bool
	}{
		{[]AnyKey{a, b}, true},
		{[]AnyKey{b, a, far}, false},
	} {
		s, errs := newSchema(c.keys)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if (s.dense != nil) != c.dense {
			t.Errorf("schema of %d keys: dense index %v, want %v", len(c.keys), s.dense != nil, c.dense)
		}
		for id := a.keyID() - 2; id <= far.keyID()+2; id++ {
			want, wok := s.index[id]
			got, ok := s.slotOf(id)
			if ok != wok || got != want {
				t.Fatalf("%s: slotOf(%d) = %d, %v; the map says %d, %v", fmt.Sprint(c.keys), id, got, ok, want, wok)
			}
		}
		if _, ok := s.slotOf(between.keyID()); ok {
			t.Errorf("slotOf finds a key that is not in the schema")
		}
	}
}

// TestOneGoodWrite checks execTask's inline test of a node's one write
// against checkWrites: it may accept only what checkWrites accepts, for
// keys inside and outside the dense range, a zero write and more writes.
func TestOneGoodWrite(t *testing.T) {
	a := NewKey[int]("a")
	inside := NewKey[int]("inside") // between a and b: in the dense range, not in the schema
	b := NewKey[int]("b")
	for range maxDense {
		NewKey[int]("filler")
	}
	outside := NewKey[int]("outside")
	for _, keys := range [][]AnyKey{{a, b}, {a, b, outside}} {
		s, errs := newSchema(keys)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		r := &run{g: &Graph{sch: s}}
		for _, ws := range []Update{
			{a.Set(1)}, {b.Set(1)}, {inside.Set(1)}, {outside.Set(1)}, {{}}, {a.Set(1), b.Set(2)}, {a.Set(1), inside.Set(2)}, nil,
		} {
			tk := &task{writes: ws}
			good := r.oneGoodWrite(tk)
			err := r.checkWrites(tk)
			if good && err != nil {
				t.Errorf("%d keys, writes %v: oneGoodWrite accepts what checkWrites refuses (%v)", len(keys), ws, err)
			}
			if want := len(ws) == 1 && err == nil && s.dense != nil; good != want {
				t.Errorf("%d keys, writes %v: oneGoodWrite = %v, want %v", len(keys), ws, good, want)
			}
		}
	}
}
