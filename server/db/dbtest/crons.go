package dbtest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

func cronID(c db.Cron) string { return c.ID }

func mkCron(t *testing.T, d db.DB, ten string, c db.Cron) db.Cron {
	t.Helper()
	if c.Schedule == "" {
		c.Schedule = "* * * * *"
	}
	if c.AssistantID == "" {
		c.AssistantID = "asst"
	}
	out, err := d.CreateCron(bg(), ten, c)
	ok(t, "CreateCron "+c.ID, err)
	return out
}

func testCronCRUD(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "th", nil)
	next := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	end := next.Add(time.Hour)
	c := mkCron(t, d, ten, db.Cron{ID: "c1", AssistantID: "a1", ThreadID: "th", UserID: "u", Schedule: "4 3 * * *", Timezone: "Europe/Paris",
		Payload: json.RawMessage(`{"input":{"n":1}}`), Metadata: db.Metadata{"k": "v"}, NextRunAt: next, EndTime: end, Enabled: true})
	if c.ID != "c1" || c.AssistantID != "a1" || c.ThreadID != "th" || c.UserID != "u" || c.Schedule != "4 3 * * *" || c.Timezone != "Europe/Paris" ||
		!c.NextRunAt.Equal(next) || !c.EndTime.Equal(end) || !c.Enabled || c.OnRunCompleted != "delete" || c.CreatedAt.IsZero() {
		t.Errorf("CreateCron = %+v", c)
	}
	jsonEq(t, "payload", c.Payload, `{"input":{"n":1}}`)
	jsonEq(t, "metadata", c.Metadata, `{"k":"v"}`)
	got, err := d.GetCron(bg(), ten, "c1")
	ok(t, "GetCron", err)
	if got.ID != "c1" || !got.NextRunAt.Equal(next) || got.ThreadID != "th" {
		t.Errorf("GetCron = %+v", got)
	}
	_, err = d.CreateCron(bg(), ten, db.Cron{ID: "c1", AssistantID: "a1", Schedule: "* * * * *"})
	isErr(t, "CreateCron twice", err, db.ErrConflict)
	_, err = d.CreateCron(bg(), ten, db.Cron{AssistantID: "a1", ThreadID: "nope", Schedule: "* * * * *"})
	isErr(t, "CreateCron on a missing thread", err, db.ErrNotFound)
	_, err = d.CreateCron(bg(), ten, db.Cron{AssistantID: "a1", Schedule: "* * * * *", OnRunCompleted: "drop"})
	isErr(t, "CreateCron bad on_run_completed", err, db.ErrInvalid)
	_, err = d.CreateCron(bg(), ten, db.Cron{AssistantID: "a1", Schedule: "* * * * *", Payload: json.RawMessage(`[1]`)})
	isErr(t, "CreateCron payload not an object", err, db.ErrInvalid)

	stateless := mkCron(t, d, ten, db.Cron{OnRunCompleted: "keep"})
	if stateless.ID == "" || stateless.ThreadID != "" || !stateless.NextRunAt.IsZero() || stateless.Enabled {
		t.Errorf("stateless cron = %+v", stateless)
	}

	next2 := next.Add(24 * time.Hour)
	up, err := d.UpdateCron(bg(), ten, "c1", db.CronPatch{Schedule: ptr("5 3 * * *"), Metadata: db.Metadata{"x": 1.0},
		Payload: json.RawMessage(`{"input":{"n":2}}`), Enabled: ptr(false), NextRunAt: &next2, ClearEndTime: true})
	ok(t, "UpdateCron", err)
	if up.Schedule != "5 3 * * *" || up.Enabled || !up.NextRunAt.Equal(next2) || !up.EndTime.IsZero() || up.Timezone != "Europe/Paris" {
		t.Errorf("UpdateCron = %+v", up)
	}
	jsonEq(t, "merged metadata", up.Metadata, `{"k":"v","x":1}`)
	jsonEq(t, "replaced payload", up.Payload, `{"input":{"n":2}}`)
	_, err = d.UpdateCron(bg(), ten, "nope", db.CronPatch{})
	isErr(t, "UpdateCron missing", err, db.ErrNotFound)
	_, err = d.UpdateCron(bg(), tenant(t, "other"), "c1", db.CronPatch{})
	isErr(t, "UpdateCron other tenant", err, db.ErrNotFound)

	ok(t, "DeleteCron", d.DeleteCron(bg(), ten, stateless.ID))
	isErr(t, "DeleteCron again", d.DeleteCron(bg(), ten, stateless.ID), db.ErrNotFound)
	_, err = d.GetCron(bg(), ten, stateless.ID)
	isErr(t, "GetCron deleted", err, db.ErrNotFound)

	ok(t, "DeleteThread", d.DeleteThread(bg(), ten, "th"))
	_, err = d.GetCron(bg(), ten, "c1")
	isErr(t, "a thread's cron after DeleteThread", err, db.ErrNotFound)
}

func testCronSearch(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "th", nil)
	mkCron(t, d, ten, db.Cron{ID: "c1", AssistantID: "a1", Metadata: db.Metadata{"team": "x"}, Enabled: true})
	mkCron(t, d, ten, db.Cron{ID: "c2", AssistantID: "a2", ThreadID: "th", Metadata: db.Metadata{"team": "y"}, Enabled: true})
	mkCron(t, d, ten, db.Cron{ID: "c3", AssistantID: "a1", ThreadID: "th", Metadata: db.Metadata{"team": "x"}})
	mkCron(t, d, tenant(t, "b"), db.Cron{ID: "c4", AssistantID: "a1"})
	for _, tc := range []struct {
		name string
		q    db.CronQuery
		want []string
	}{
		{"all by id", db.CronQuery{Query: db.Query{SortBy: "cron_id", SortOrder: "asc"}}, []string{"c1", "c2", "c3"}},
		{"assistant", db.CronQuery{AssistantID: "a1", Query: db.Query{SortBy: "cron_id", SortOrder: "asc"}}, []string{"c1", "c3"}},
		{"thread", db.CronQuery{ThreadID: "th", Query: db.Query{SortBy: "cron_id"}}, []string{"c3", "c2"}},
		{"enabled", db.CronQuery{Enabled: ptr(true), Query: db.Query{SortBy: "cron_id", SortOrder: "asc"}}, []string{"c1", "c2"}},
		{"metadata", db.CronQuery{Query: db.Query{Metadata: db.Metadata{"team": "x"}, SortBy: "cron_id", SortOrder: "asc"}}, []string{"c1", "c3"}},
		{"paged", db.CronQuery{Query: db.Query{SortBy: "cron_id", SortOrder: "asc", Limit: 1, Offset: 1}}, []string{"c2"}},
	} {
		got, err := d.SearchCrons(bg(), ten, tc.q)
		ok(t, tc.name, err)
		sameIDs(t, tc.name, ids(got, cronID), tc.want)
		n, err := d.CountCrons(bg(), ten, db.CronQuery{AssistantID: tc.q.AssistantID, ThreadID: tc.q.ThreadID, Enabled: tc.q.Enabled, Query: db.Query{Metadata: tc.q.Metadata}})
		ok(t, tc.name+" count", err)
		if tc.q.Limit == 0 && n != len(tc.want) {
			t.Errorf("%s: CountCrons = %d, want %d", tc.name, n, len(tc.want))
		}
	}
	_, err := d.SearchCrons(bg(), ten, db.CronQuery{Query: db.Query{SortBy: "schedule"}})
	names(t, "sort by an unknown column", err, "sort_by", "next_run_date")
	isErr(t, "sort by an unknown column", err, db.ErrInvalid)
}

// testCronDueAdvance checks that due crons are listed and that of several
// claimers of one slot exactly one wins.
func testCronDueAdvance(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	slot := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	mkCron(t, d, ten, db.Cron{ID: "due", NextRunAt: slot, Enabled: true})
	mkCron(t, d, ten, db.Cron{ID: "disabled", NextRunAt: slot, Enabled: false})
	mkCron(t, d, ten, db.Cron{ID: "later", NextRunAt: slot.Add(time.Hour), Enabled: true})
	mkCron(t, d, ten, db.Cron{ID: "ended", Enabled: true})
	due, err := d.DueCrons(bg(), slot.Add(time.Minute), 1000)
	ok(t, "DueCrons", err)
	var mine []string
	for _, c := range due {
		if c.Tenant == ten {
			mine = append(mine, c.ID)
			if !c.NextRunAt.Equal(slot) {
				t.Errorf("due cron NextRunAt = %v, want %v", c.NextRunAt, slot)
			}
		}
	}
	sameIDs(t, "due crons", mine, []string{"due"})

	next := slot.Add(time.Minute)
	const claimers = 8
	var wg sync.WaitGroup
	wins := make(chan bool, claimers)
	for range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := d.AdvanceCron(bg(), ten, "due", slot, next)
			if err != nil {
				t.Errorf("AdvanceCron: %v", err)
			}
			wins <- won
		}()
	}
	wg.Wait()
	close(wins)
	n := 0
	for w := range wins {
		if w {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d claimers of one slot won, want exactly 1", n)
	}
	c, err := d.GetCron(bg(), ten, "due")
	ok(t, "GetCron", err)
	if !c.NextRunAt.Equal(next) {
		t.Errorf("NextRunAt after the claim = %v, want %v", c.NextRunAt, next)
	}
	won, err := d.AdvanceCron(bg(), ten, "disabled", slot, next)
	ok(t, "AdvanceCron disabled", err)
	if won {
		t.Error("AdvanceCron claimed a disabled cron's slot")
	}
	won, err = d.AdvanceCron(bg(), ten, "due", next, time.Time{})
	ok(t, "AdvanceCron to none", err)
	c, _ = d.GetCron(bg(), ten, "due")
	if !won || !c.NextRunAt.IsZero() {
		t.Errorf("AdvanceCron to none: won %v, NextRunAt %v", won, c.NextRunAt)
	}
}
