package sqlite

import (
	"strings"
	"testing"
)

// The INSERT of n events is a prefix of the longest one, ending after its
// n-th row of parameters.
func TestEventInsertPrefix(t *testing.T) {
	for _, n := range []int{1, 2, 7, eventRowsMax} {
		want := `INSERT INTO trellis_run_events (tenant, run_id, seq, event, data, created_at) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?), `, n), ", ")
		if got := eventInsert[:eventRowsLen(n)]; got != want {
			t.Fatalf("the statement for %d events is\n%s\nwant\n%s", n, got, want)
		}
	}
}
