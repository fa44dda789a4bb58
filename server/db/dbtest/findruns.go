package dbtest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

// FindRuns selects one assistant's runs across threads by metadata (a
// value, a missing key), newest first, and pages by cursor: runs added
// between pages neither repeat nor shift the later pages.
func testFindRuns(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t1", nil)
	mkThread(t, d, ten, "t2", nil)
	mk := func(id, thread, asst string, md db.Metadata) {
		t.Helper()
		_, err := d.CreateRun(bg(), ten, db.Run{ID: id, ThreadID: thread, AssistantID: asst, Metadata: md})
		ok(t, "CreateRun "+id, err)
	}
	for i := range 6 {
		thread := []string{"t1", "t2"}[i%2]
		mk(fmt.Sprintf("r%d", i), thread, "asst", db.Metadata{"source": "a2a"})
		mk(fmt.Sprintf("x%d", i), thread, "other", db.Metadata{"source": "a2a"}) // another assistant's
	}
	mk("answer", "t1", "asst", db.Metadata{"source": "a2a", "a2a_task": "r0"}) // has the missing key
	mk("plain", "t2", "asst", db.Metadata{"source": "api"})                    // another value
	q := db.RunSearch{AssistantID: "asst", Metadata: map[string]string{"source": "a2a"}, Missing: []string{"a2a_task"}, Limit: 2}
	var seen []string
	for page := 0; ; page++ {
		rs, err := d.FindRuns(bg(), ten, q)
		ok(t, "FindRuns", err)
		for _, r := range rs {
			seen = append(seen, r.ID)
		}
		if page == 0 {
			mk("r6", "t1", "asst", db.Metadata{"source": "a2a"}) // added while paging: newer than the cursor
		}
		if len(rs) < q.Limit {
			break
		}
		last := rs[len(rs)-1]
		q.Before = &db.RunCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	if want := []string{"r5", "r4", "r3", "r2", "r1", "r0"}; !slices.Equal(seen, want) {
		t.Errorf("pages gave %v, want %v", seen, want)
	}
	if _, err := d.FindRuns(bg(), ten, db.RunSearch{AssistantID: "asst", Missing: []string{`a"b`}}); err == nil {
		t.Error("FindRuns with a quoted key: no error")
	}
	if rs, err := d.FindRuns(bg(), "nobody", db.RunSearch{AssistantID: "asst"}); err != nil || len(rs) != 0 {
		t.Errorf("FindRuns in another tenant = %d runs, %v; want none", len(rs), err)
	}
}
