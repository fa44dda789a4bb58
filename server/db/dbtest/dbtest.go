// Package dbtest is the conformance suite every db.DB passes, in the
// manner of testing/fstest.
//
// A backend's test calls Run with a constructor:
//
//	func TestDB(t *testing.T) {
//		dbtest.Run(t, func(t *testing.T) db.DB { return open(t) })
//	}
//
// Run calls the constructor once per subtest. It may return a new DB each
// time or one shared by every subtest: each subtest works in tenants of
// its own, and the methods that span tenants (ExpiredLeases, PruneEvents)
// are checked on the subtest's rows only. A constructor that needs cleanup
// registers it with t.Cleanup; the suite does not call Close.
//
// A backend that decodes stored rows also implements Corrupter, so that
// the suite can check that an undecodable row is an error naming it.
package dbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// Corrupter is implemented by a DB under test that decodes what it
// stores. Corrupt damages the stored metadata of one row of tenant —
// kind is "assistant", "thread" or "run" and id its ID — so that reading
// it fails to decode; the suite then checks that reads report an error
// naming the row instead of returning a zero value.
type Corrupter interface {
	Corrupt(kind, tenant, id string) error
}

// Run runs the conformance suite against the DBs newDB returns, one
// subtest per behaviour.
func Run(t *testing.T, newDB func(t *testing.T) db.DB) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, d db.DB)
	}{
		{"AssistantCreate", testAssistantCreate},
		{"AssistantUpdateVersions", testAssistantUpdateVersions},
		{"AssistantDelete", testAssistantDelete},
		{"AssistantSearch", testAssistantSearch},
		{"AssistantSort", testAssistantSort},
		{"ThreadCreate", testThreadCreate},
		{"ThreadUpdate", testThreadUpdate},
		{"ThreadDeleteCascades", testThreadDeleteCascades},
		{"ThreadSearch", testThreadSearch},
		{"ThreadSearchExactNumbers", testThreadSearchExactNumbers},
		{"ThreadSortPaging", testThreadSortPaging},
		{"ThreadCopy", testThreadCopy},
		{"CheckpointMetadata", testCheckpointMetadata},
		{"ThreadTTL", testThreadTTL},
		{"RunCreateGetList", testRunCreateGetList},
		{"RunDelete", testRunDelete},
		{"FindRuns", testFindRuns},
		{"NextPending", testNextPending},
		{"Claim", testClaim},
		{"ClaimConcurrent", testClaimConcurrent},
		{"LeaseRenewExpire", testLeaseRenewExpire},
		{"PendingThreads", testPendingThreads},
		{"TakeOverFences", testTakeOverFences},
		{"TakeOverRace", testTakeOverRace},
		{"FinishRun", testFinishRun},
		{"Cancel", testCancel},
		{"EventsAppendRead", testEventsAppendRead},
		{"EventsConcurrent", testEventsConcurrent},
		{"EventsDeletePrune", testEventsDeletePrune},
		{"TenantIsolation", testTenantIsolation},
		{"SameIDTwoTenants", testSameIDTwoTenants},
		{"CronCRUD", testCronCRUD},
		{"CronSearch", testCronSearch},
		{"CronDueAdvance", testCronDueAdvance},
		{"InvalidArguments", testInvalidArguments},
		{"CanceledContext", testCanceledContext},
		{"Corrupt", testCorrupt},
		{"Keys", testKeys},
		{"DatasetVersions", testDatasetVersions},
		{"DatasetCRUD", testDatasetCRUD},
		{"DatasetTenancy", testDatasetTenancy},
		{"Feedback", testFeedback},
		{"Experiments", testExperiments},
		{"ExperimentResultsOnce", testExperimentResultsOnce},
		{"Export", testExport},
		{"ClaimWithin", testClaimWithin},
		{"AssistantVersionGet", testAssistantVersionGet},
		{"AssistantResolve", testAssistantResolve},
		{"NextPendingRun", testNextPendingRun},
		{"EventsStatus", testEventsStatus},
		{"PendingAfter", testPendingAfter},
		{"ThreadForRun", testThreadForRun},
		{"PreClaim", testPreClaim},
		{"AcceptTx", testAcceptTx},
		{"ImportLegacyLeases", testImportLegacyLeases},
		{"FinishWithResult", testFinishWithResult},
		{"FinishPending", testFinishPending},
		{"TagThread", testTagThread},
		{"ResultTitle", testResultTitle},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newDB(t))
		})
	}
}

func bg() context.Context { return context.Background() }

// tenant returns a tenant name no other subtest or run uses.
func tenant(t *testing.T, label string) string {
	return fmt.Sprintf("%s/%s/%x", t.Name(), label, rand.Uint64())
}

// within checks that got lies in [from, to], allowing for the stores'
// microsecond precision.
func within(t *testing.T, what string, got, from, to time.Time) {
	t.Helper()
	if got.Before(from.Truncate(time.Microsecond)) || got.After(to) {
		t.Errorf("%s = %v, want between %v and %v", what, got, from, to)
	}
}

// jsonEq checks that got encodes to the same JSON as want (by meaning).
func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	var g, w any
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: marshal %v: %v", what, got, err)
	}
	if raw, ok := got.(json.RawMessage); ok {
		b = raw
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, b, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want %s is not JSON: %v", what, want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s = %s, want %s", what, gb, wb)
	}
}

// isErr checks that err wraps want.
func isErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want one wrapping %v", what, err, want)
	}
}

// ok fails the test on err.
func ok(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// names checks an error's text names every part.
func names(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one naming %q", what, parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not name %q", what, err, p)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// ids returns the IDs of assistants, threads or runs, in order.
func ids[T any](rows []T, id func(T) string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = id(r)
	}
	return out
}

func assistantID(a db.Assistant) string { return a.ID }
func threadID(th db.Thread) string      { return th.ID }
func runID(r db.Run) string             { return r.ID }

// sameIDs checks got lists exactly want, in order.
func sameIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") || len(got) != len(want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// mkThread creates a thread with metadata md.
func mkThread(t *testing.T, d db.DB, ten, id string, md db.Metadata) db.Thread {
	t.Helper()
	th, err := d.CreateThread(bg(), ten, db.Thread{ID: id, Metadata: md}, db.IfExistsRaise)
	ok(t, "CreateThread "+id, err)
	return th
}

// mkRun creates a pending run on thread.
func mkRun(t *testing.T, d db.DB, ten, thread, id string) db.Run {
	t.Helper()
	r, err := d.CreateRun(bg(), ten, db.Run{ID: id, ThreadID: thread, AssistantID: "asst", Kwargs: json.RawMessage(`{"input":{"n":1}}`)})
	ok(t, "CreateRun "+id, err)
	return r
}

// claim claims a run for owner with a one-hour lease.
func claim(t *testing.T, d db.DB, ten, run, owner string) db.Lease {
	t.Helper()
	_, l, err := d.ClaimRun(bg(), ten, run, owner, time.Hour)
	ok(t, "ClaimRun "+run, err)
	return l
}

// events makes n events named name with data {"i": k}.
func events(name string, from, n int) []db.Event {
	out := make([]db.Event, n)
	for i := range out {
		out[i] = db.Event{Event: name, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, from+i))}
	}
	return out
}
