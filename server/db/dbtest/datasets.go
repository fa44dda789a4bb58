package dbtest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

func dcase(id, msg string) db.DatasetCase {
	return db.DatasetCase{ID: id, Data: json.RawMessage(fmt.Sprintf(`{"id":%q,"input":{"message":%q}}`, id, msg))}
}

// caseSummary lists "id=message@version" of cases, in order.
func caseSummary(t *testing.T, cs []db.DatasetCase) []string {
	t.Helper()
	out := make([]string, len(cs))
	for i, c := range cs {
		var v struct {
			Input struct{ Message string } `json:"input"`
		}
		if err := json.Unmarshal(c.Data, &v); err != nil {
			t.Fatalf("case %s data %s: %v", c.ID, c.Data, err)
		}
		out[i] = fmt.Sprintf("%s=%s@%d", c.ID, v.Input.Message, c.Version)
	}
	return out
}

func casesAt(t *testing.T, d db.DB, ten, id string, version int) []string {
	t.Helper()
	cs, err := d.DatasetCases(bg(), ten, id, version)
	ok(t, fmt.Sprintf("DatasetCases v%d", version), err)
	return caseSummary(t, cs)
}

// testDatasetVersions: adding, replacing and removing cases each make a
// version; every version reads back as it was; a case keeps its place
// and ID across edits.
func testDatasetVersions(t *testing.T, d db.DB) {
	ten := tenant(t, "t")
	ds, err := d.CreateDataset(bg(), ten, db.Dataset{Name: "qa", Description: "questions", Metadata: db.Metadata{"team": "x"},
		Criteria: json.RawMessage(`[{"evaluator":"exact"}]`)}, []db.DatasetCase{dcase("a", "one"), dcase("b", "two")})
	ok(t, "CreateDataset", err)
	if ds.ID == "" || ds.Version != 1 || ds.Cases != 2 || ds.Name != "qa" || ds.Metadata["team"] != "x" {
		t.Fatalf("created %+v", ds)
	}
	jsonEq(t, "criteria", ds.Criteria, `[{"evaluator":"exact"}]`)
	ds, err = d.AddCases(bg(), ten, ds.ID, []db.DatasetCase{dcase("c", "three")})
	ok(t, "AddCases", err)
	if ds.Version != 2 || ds.Cases != 3 {
		t.Errorf("after add: version %d cases %d, want 2 and 3", ds.Version, ds.Cases)
	}
	ds, err = d.ReplaceCase(bg(), ten, ds.ID, dcase("a", "ONE"))
	ok(t, "ReplaceCase", err)
	if ds.Version != 3 || ds.Cases != 3 {
		t.Errorf("after replace: version %d cases %d, want 3 and 3", ds.Version, ds.Cases)
	}
	ds, err = d.RemoveCase(bg(), ten, ds.ID, "b")
	ok(t, "RemoveCase", err)
	if ds.Version != 4 || ds.Cases != 2 {
		t.Errorf("after remove: version %d cases %d, want 4 and 2", ds.Version, ds.Cases)
	}
	sameIDs(t, "v1", casesAt(t, d, ten, ds.ID, 1), []string{"a=one@1", "b=two@1"})
	sameIDs(t, "v2", casesAt(t, d, ten, ds.ID, 2), []string{"a=one@1", "b=two@1", "c=three@2"})
	sameIDs(t, "v3", casesAt(t, d, ten, ds.ID, 3), []string{"a=ONE@3", "b=two@1", "c=three@2"})
	sameIDs(t, "v4", casesAt(t, d, ten, ds.ID, 4), []string{"a=ONE@3", "c=three@2"})
	sameIDs(t, "latest", casesAt(t, d, ten, ds.ID, 0), []string{"a=ONE@3", "c=three@2"})
	// A removed case's ID may come back, at the end.
	ds, err = d.AddCases(bg(), ten, ds.ID, []db.DatasetCase{dcase("b", "again")})
	ok(t, "AddCases of a removed ID", err)
	sameIDs(t, "v5", casesAt(t, d, ten, ds.ID, 5), []string{"a=ONE@3", "c=three@2", "b=again@5"})
	sameIDs(t, "v4 unchanged", casesAt(t, d, ten, ds.ID, 4), []string{"a=ONE@3", "c=three@2"})

	_, err = d.DatasetCases(bg(), ten, ds.ID, 6)
	isErr(t, "a version not yet made", err, db.ErrNotFound)
	_, err = d.DatasetCases(bg(), ten, ds.ID, -1)
	isErr(t, "a negative version", err, db.ErrInvalid)
	_, err = d.AddCases(bg(), ten, ds.ID, []db.DatasetCase{dcase("a", "dup")})
	isErr(t, "adding a current case's ID", err, db.ErrConflict)
	_, err = d.AddCases(bg(), ten, ds.ID, []db.DatasetCase{dcase("x", "1"), dcase("x", "2")})
	isErr(t, "an ID twice in one add", err, db.ErrInvalid)
	_, err = d.AddCases(bg(), ten, ds.ID, []db.DatasetCase{{ID: "y", Data: json.RawMessage(`[1]`)}})
	isErr(t, "a case that is not an object", err, db.ErrInvalid)
	_, err = d.ReplaceCase(bg(), ten, ds.ID, dcase("zz", "none"))
	isErr(t, "replacing a missing case", err, db.ErrNotFound)
	_, err = d.RemoveCase(bg(), ten, ds.ID, "zz")
	isErr(t, "removing a missing case", err, db.ErrNotFound)
	got, err := d.GetDataset(bg(), ten, ds.ID)
	ok(t, "GetDataset", err)
	if got.Version != 5 || got.Cases != 3 {
		t.Errorf("failed changes moved the dataset: version %d cases %d, want 5 and 3", got.Version, got.Cases)
	}

	_, err = d.CreateDataset(bg(), ten, db.Dataset{Name: "empty"}, nil)
	ok(t, "CreateDataset with no cases", err)
	_, err = d.CreateDataset(bg(), ten, db.Dataset{Name: "qa"}, nil)
	isErr(t, "a taken name", err, db.ErrConflict)
	_, err = d.CreateDataset(bg(), ten, db.Dataset{Name: ""}, nil)
	isErr(t, "no name", err, db.ErrInvalid)
	_, err = d.CreateDataset(bg(), ten, db.Dataset{Name: "bad", Criteria: json.RawMessage(`{"a":1}`)}, nil)
	isErr(t, "criteria not an array", err, db.ErrInvalid)
}

// testDatasetCRUD: update, search by name with paging, delete with cases.
func testDatasetCRUD(t *testing.T, d db.DB) {
	ten := tenant(t, "t")
	var ids []string
	for _, n := range []string{"Alpha set", "beta", "alphabet"} {
		ds, err := d.CreateDataset(bg(), ten, db.Dataset{Name: n}, []db.DatasetCase{dcase("a", n)})
		ok(t, "CreateDataset "+n, err)
		ids = append(ids, ds.ID)
	}
	name, desc := "gamma", "renamed"
	ds, err := d.UpdateDataset(bg(), ten, ids[1], db.DatasetPatch{Name: &name, Description: &desc, Metadata: db.Metadata{"k": 1},
		Criteria: json.RawMessage(`[{"evaluator":"contains"}]`)})
	ok(t, "UpdateDataset", err)
	if ds.Name != "gamma" || ds.Description != "renamed" || ds.Version != 1 || ds.Metadata["k"] != float64(1) {
		t.Errorf("updated %+v", ds)
	}
	jsonEq(t, "updated criteria", ds.Criteria, `[{"evaluator":"contains"}]`)
	_, err = d.UpdateDataset(bg(), ten, ids[1], db.DatasetPatch{Name: new("alphabet")})
	isErr(t, "renaming onto a taken name", err, db.ErrConflict)
	_, err = d.UpdateDataset(bg(), ten, "missing", db.DatasetPatch{Name: &name})
	isErr(t, "updating a missing dataset", err, db.ErrNotFound)

	names := func(q db.DatasetQuery) []string {
		t.Helper()
		got, err := d.SearchDatasets(bg(), ten, q)
		ok(t, "SearchDatasets", err)
		out := make([]string, len(got))
		for i, g := range got {
			out[i] = g.Name
		}
		return out
	}
	sameIDs(t, "all, newest first", names(db.DatasetQuery{}), []string{"alphabet", "gamma", "Alpha set"})
	sameIDs(t, "name filter", names(db.DatasetQuery{Name: "ALPHA"}), []string{"alphabet", "Alpha set"})
	sameIDs(t, "paging", names(db.DatasetQuery{Limit: 1, Offset: 1}), []string{"gamma"})
	_, err = d.SearchDatasets(bg(), ten, db.DatasetQuery{Limit: -1})
	isErr(t, "a negative limit", err, db.ErrInvalid)

	ok(t, "DeleteDataset", d.DeleteDataset(bg(), ten, ids[0]))
	_, err = d.GetDataset(bg(), ten, ids[0])
	isErr(t, "a deleted dataset", err, db.ErrNotFound)
	_, err = d.DatasetCases(bg(), ten, ids[0], 0)
	isErr(t, "a deleted dataset's cases", err, db.ErrNotFound)
	isErr(t, "deleting twice", d.DeleteDataset(bg(), ten, ids[0]), db.ErrNotFound)
	// Its name is free again.
	_, err = d.CreateDataset(bg(), ten, db.Dataset{Name: "Alpha set"}, nil)
	ok(t, "CreateDataset with a deleted dataset's name", err)
}

// testDatasetTenancy: another tenant sees none of a tenant's datasets and
// may reuse its names.
func testDatasetTenancy(t *testing.T, d db.DB) {
	a, b := tenant(t, "a"), tenant(t, "b")
	ds, err := d.CreateDataset(bg(), a, db.Dataset{Name: "qa"}, []db.DatasetCase{dcase("c1", "x")})
	ok(t, "CreateDataset", err)
	_, err = d.GetDataset(bg(), b, ds.ID)
	isErr(t, "GetDataset of another tenant", err, db.ErrNotFound)
	_, err = d.DatasetCases(bg(), b, ds.ID, 0)
	isErr(t, "DatasetCases of another tenant", err, db.ErrNotFound)
	_, err = d.AddCases(bg(), b, ds.ID, []db.DatasetCase{dcase("c2", "y")})
	isErr(t, "AddCases of another tenant", err, db.ErrNotFound)
	_, err = d.ReplaceCase(bg(), b, ds.ID, dcase("c1", "y"))
	isErr(t, "ReplaceCase of another tenant", err, db.ErrNotFound)
	_, err = d.RemoveCase(bg(), b, ds.ID, "c1")
	isErr(t, "RemoveCase of another tenant", err, db.ErrNotFound)
	_, err = d.UpdateDataset(bg(), b, ds.ID, db.DatasetPatch{Description: new("x")})
	isErr(t, "UpdateDataset of another tenant", err, db.ErrNotFound)
	isErr(t, "DeleteDataset of another tenant", d.DeleteDataset(bg(), b, ds.ID), db.ErrNotFound)
	found, err := d.SearchDatasets(bg(), b, db.DatasetQuery{})
	ok(t, "SearchDatasets", err)
	if len(found) != 0 {
		t.Errorf("tenant b finds %d datasets of a", len(found))
	}
	_, err = d.CreateDataset(bg(), b, db.Dataset{Name: "qa"}, nil)
	ok(t, "the same name in another tenant", err)
	sameIDs(t, "a's cases untouched", casesAt(t, d, a, ds.ID, 0), []string{"c1=x@1"})
}

// testFeedback: feedback on a run is stored, listed oldest first,
// deleted one by one, refused on a missing run or another tenant's,
// bounded in score, and deleted with the thread.
func testFeedback(t *testing.T, d db.DB) {
	ten, other := tenant(t, "t"), tenant(t, "o")
	mkThread(t, d, ten, "th", nil)
	mkRun(t, d, ten, "th", "r1")
	one, half := 1.0, 0.5
	f1, err := d.CreateFeedback(bg(), ten, db.Feedback{ThreadID: "th", RunID: "r1", Key: "user_score", Score: &one, Comment: "good", MessageID: "m1", Source: db.FeedbackPerson})
	ok(t, "CreateFeedback", err)
	if f1.ID == "" || f1.CreatedAt.IsZero() || *f1.Score != 1 || f1.Value != nil {
		t.Errorf("created %+v", f1)
	}
	f2, err := d.CreateFeedback(bg(), ten, db.Feedback{ThreadID: "th", RunID: "r1", Key: "helpful", Score: &half,
		Value: json.RawMessage(`"somewhat"`), Correction: json.RawMessage(`{"answer":"42"}`)})
	ok(t, "CreateFeedback 2", err)
	list, err := d.ListFeedback(bg(), ten, "th", "r1")
	ok(t, "ListFeedback", err)
	if len(list) != 2 || list[0].ID != f1.ID || list[1].ID != f2.ID {
		t.Fatalf("listed %+v", list)
	}
	if list[0].Comment != "good" || list[0].MessageID != "m1" || *list[0].Score != 1 || list[0].Key != "user_score" ||
		!list[0].CreatedAt.Equal(f1.CreatedAt) || list[0].ThreadID != "th" || list[0].RunID != "r1" {
		t.Errorf("read back %+v, created %+v", list[0], f1)
	}
	if *list[1].Score != 0.5 {
		t.Errorf("score %v, want 0.5", *list[1].Score)
	}
	if f1.Source != db.FeedbackPerson || list[0].Source != db.FeedbackPerson || f2.Source != db.FeedbackAPI || list[1].Source != db.FeedbackAPI {
		t.Errorf("sources: created %q and %q, read back %q and %q; want person, then api (the default)", f1.Source, f2.Source, list[0].Source, list[1].Source)
	}
	jsonEq(t, "value", list[1].Value, `"somewhat"`)
	jsonEq(t, "correction", list[1].Correction, `{"answer":"42"}`)

	two := 2.0
	_, err = d.CreateFeedback(bg(), ten, db.Feedback{ThreadID: "th", RunID: "r1", Key: "k", Score: &two})
	isErr(t, "a score above 1", err, db.ErrInvalid)
	_, err = d.CreateFeedback(bg(), ten, db.Feedback{ThreadID: "th", RunID: "r1"})
	isErr(t, "no key", err, db.ErrInvalid)
	_, err = d.CreateFeedback(bg(), ten, db.Feedback{ThreadID: "th", RunID: "nope", Key: "k"})
	isErr(t, "a missing run", err, db.ErrNotFound)
	_, err = d.CreateFeedback(bg(), other, db.Feedback{ThreadID: "th", RunID: "r1", Key: "k"})
	isErr(t, "another tenant's run", err, db.ErrNotFound)
	_, err = d.ListFeedback(bg(), other, "th", "r1")
	isErr(t, "listing another tenant's run", err, db.ErrNotFound)
	isErr(t, "deleting as another tenant", d.DeleteFeedback(bg(), other, "th", "r1", f1.ID), db.ErrNotFound)

	ok(t, "DeleteFeedback", d.DeleteFeedback(bg(), ten, "th", "r1", f1.ID))
	isErr(t, "deleting twice", d.DeleteFeedback(bg(), ten, "th", "r1", f1.ID), db.ErrNotFound)
	list, err = d.ListFeedback(bg(), ten, "th", "r1")
	ok(t, "ListFeedback after delete", err)
	if len(list) != 1 || list[0].ID != f2.ID {
		t.Errorf("after delete: %+v", list)
	}

	ok(t, "DeleteThread", d.DeleteThread(bg(), ten, "th"))
	mkThread(t, d, ten, "th", nil)
	mkRun(t, d, ten, "th", "r1")
	list, err = d.ListFeedback(bg(), ten, "th", "r1")
	ok(t, "ListFeedback on the recreated run", err)
	if len(list) != 0 {
		t.Errorf("feedback outlived its thread: %+v", list)
	}
}
