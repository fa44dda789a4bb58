package graph

import (
	"encoding/json"
	"testing"
)

// TestMinDelta checks that no delta is shorter than minDelta, below which
// blob does not encode one: the shortest write, of a one-byte value, makes
// exactly minDelta bytes.
func TestMinDelta(t *testing.T) {
	k := NewKey("n", Sum[int]())
	for _, c := range []struct {
		v    int
		want int
	}{{1, minDelta}, {12, minDelta + 1}} {
		data, fits, err := deltaData(k, []Write{k.Set(c.v)}, nil, 1<<10)
		if err != nil || !fits {
			t.Fatalf("deltaData = %q, %v, %v", data, fits, err)
		}
		if len(data) != c.want {
			t.Errorf("the delta of one write of %d is %q (%d bytes), want %d bytes", c.v, data, len(data), c.want)
		}
	}
}

// TestNoRoutesIsMarshal checks that the bytes a task without targets
// stores under WriteGoto are json.Marshal's of its wireRoutes, which
// restoreTask reads back, and that each call returns a slice of its own.
func TestNoRoutesIsMarshal(t *testing.T) {
	for _, via := range []bool{false, true} {
		want, err := json.Marshal(wireRoutes{Goto: via, Targets: []wireTarget{}})
		if err != nil {
			t.Fatal(err)
		}
		got := noRoutes(via)
		if string(got) != string(want) {
			t.Errorf("noRoutes(%v) = %s, want %s", via, got, want)
		}
		var back wireRoutes
		if err := json.Unmarshal(got, &back); err != nil || back.Goto != via || back.Targets == nil || len(back.Targets) != 0 {
			t.Errorf("noRoutes(%v) reads back as %+v (%v)", via, back, err)
		}
		got[0] = 'x'
		if again := noRoutes(via); again[0] != '{' {
			t.Errorf("noRoutes(%v) shares its bytes between calls", via)
		}
	}
}
