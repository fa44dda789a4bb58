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
