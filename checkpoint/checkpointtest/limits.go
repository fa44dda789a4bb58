package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
)

// RunLimits checks a Saver's size limit. newSaver returns a Saver whose
// limit on one checkpoint row, blob or pending write is maxBytes. When two
// Savers returned for the same t share their storage (as two processes on
// one database would), RunLimits also checks that data written under a
// larger limit is refused when read under a smaller one; otherwise that
// check is skipped.
func RunLimits(t *testing.T, newSaver func(t *testing.T, maxBytes int) checkpoint.Saver) {
	t.Helper()
	const limit = 4096
	big := `"` + strings.Repeat("x", 2*limit) + `"`
	small := `"` + strings.Repeat("x", limit/4) + `"`
	ctx := context.Background()

	checkTooLarge := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, checkpoint.ErrTooLarge) {
			t.Errorf("%s: error = %v, want ErrTooLarge", what, err)
			return
		}
		checkErrorNames(t, err, strconv.Itoa(limit))
	}

	t.Run("Put", func(t *testing.T) {
		s := newSaver(t, limit)
		th := newThread(t, s, "main")
		a := th.put(full("k", 1, small))
		cp, md := th.next(full("k", 2, big))
		_, err := s.Put(ctx, at(th.ref, th.latest), cp, md)
		checkTooLarge(t, "Put of a blob over the limit", err)
		cp, md = th.next(full("k", 2, small))
		cp.Next = []checkpoint.Task{{ID: "t", Node: "n", Path: "0", Payload: json.RawMessage(big)}}
		_, err = s.Put(ctx, at(th.ref, th.latest), cp, md)
		checkTooLarge(t, "Put of a checkpoint whose task payload is over the limit", err)
		err = s.PutWrites(ctx, a.ref, "t", []checkpoint.PendingWrite{{Index: 0, Key: "k", Value: json.RawMessage(big)}})
		checkTooLarge(t, "PutWrites of a value over the limit", err)
		// Nothing of the refused calls was stored.
		checkGet(t, s, th.ref, a.want([]checkpoint.Blob{full("k", 1, small)}))
		// Values under the limit are accepted.
		putWrite(t, s, a.ref, "t", small)
		b := th.put(full("k", 2, small))
		checkGet(t, s, b.ref, b.want([]checkpoint.Blob{full("k", 2, small)}))
	})

	t.Run("Read", func(t *testing.T) {
		large := newSaver(t, 4*limit)
		th := newThread(t, large, "main")
		a := th.put(full("k", 1, big))
		limited := newSaver(t, limit)
		_, err := limited.Get(ctx, a.ref)
		if errors.Is(err, checkpoint.ErrNotFound) {
			t.Skip("the Savers of one test do not share storage")
		}
		checkTooLarge(t, "Get of a blob over the limit", err)
		checkErrorNames(t, err, a.ref.ThreadID, a.ref.ID)

		wt := newThread(t, large, "writes")
		w := wt.put(full("j", 1, `1`))
		if err := large.PutWrites(ctx, w.ref, "t", []checkpoint.PendingWrite{{Index: 0, Key: "k", Value: json.RawMessage(big)}}); err != nil {
			t.Fatal(err)
		}
		_, err = limited.Get(ctx, checkpoint.Ref{ThreadID: w.ref.ThreadID, ID: w.ref.ID})
		checkTooLarge(t, "Get of a pending write over the limit", err)
	})
}
