package graph

import "testing"

// TestMinDelta checks that no delta is shorter than minDelta, below which
// blob does not encode one: the shortest write, of a one-byte value, makes
// exactly minDelta bytes.
func TestMinDelta(t *testing.T) {
	k := NewKey("n", Sum[int]())
	for _, c := range []struct {
		v    int
		want int
	}{{1, minDelta}, {12, minDelta + 1}} {
		data, fits, err := deltaData(k, []Write{k.Set(c.v)}, 1<<10)
		if err != nil || !fits {
			t.Fatalf("deltaData = %q, %v, %v", data, fits, err)
		}
		if len(data) != c.want {
			t.Errorf("the delta of one write of %d is %q (%d bytes), want %d bytes", c.v, data, len(data), c.want)
		}
	}
}
