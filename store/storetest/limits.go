package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/store"
)

// RunLimits checks a Store's size limit on values. newStore returns a Store
// whose limit is maxBytes. When two Stores returned for the same t share
// their storage, RunLimits also checks that a value put under a larger
// limit is refused by Get and Search under a smaller one; otherwise that
// check is skipped. A backend that allows reads some slack over the limit
// (see store/postgres) passes when the slack is under 3x.
func RunLimits(t *testing.T, newStore func(t *testing.T, maxBytes int) store.Store) {
	t.Helper()
	const limit = 4096
	ctx := context.Background()
	value := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }
	checkTooLarge := func(t *testing.T, what string, err error, limit int) {
		t.Helper()
		if !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("%s: error = %v, want ErrTooLarge", what, err)
			return
		}
		if !strings.Contains(err.Error(), strconv.Itoa(limit)) {
			t.Errorf("%s: error %q does not name the limit %d", what, err, limit)
		}
	}

	t.Run("Put", func(t *testing.T) {
		s := newStore(t, limit)
		b := base(t)
		checkTooLarge(t, "Put of a value over the limit", s.Put(ctx, b, "big", value(limit+1), store.PutOptions{}), limit)
		if _, err := s.Get(ctx, b, "big"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get after a refused Put: error = %v, want ErrNotFound", err)
		}
		put(t, s, b, "fits", string(value(limit)))
		check(t, "value at the limit", value(limit), get(t, s, b, "fits").Value)
	})

	t.Run("Read", func(t *testing.T) {
		large := newStore(t, 4*limit)
		b := base(t)
		put(t, large, b, "big", string(value(3*limit+100)))
		small := newStore(t, limit)
		_, err := small.Get(ctx, b, "big")
		if errors.Is(err, store.ErrNotFound) {
			t.Skip("the Stores of one test do not share storage")
		}
		if !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("Get of a value over the limit: error = %v, want ErrTooLarge", err)
		}
		_, err = small.Search(ctx, b, store.Query{})
		if !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("Search over a value over the limit: error = %v, want ErrTooLarge", err)
		}
	})
}
