package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// caseIDs lists the "id" of each case object.
func caseIDs(t *testing.T, cs []json.RawMessage) []string {
	t.Helper()
	out := make([]string, len(cs))
	for i, c := range cs {
		var v struct {
			ID    string `json:"id"`
			Input struct {
				Message string `json:"message"`
			} `json:"input"`
		}
		if err := json.Unmarshal(c, &v); err != nil {
			t.Fatal(err)
		}
		out[i] = v.ID + "=" + v.Input.Message
	}
	return out
}

// A dataset over HTTP: created with cases, changed case by case (each
// change a version), read at every version, exported as the JSONL eval
// writes, imported back, searched, renamed and deleted; bad cases and
// criteria are 422 at the field.
func TestDatasetRoutes(t *testing.T) {
	e := newResEnv(t, false)
	var ds wire.Dataset
	e.must(200, &ds, "POST", "/datasets", map[string]any{"name": "qa", "description": "questions", "metadata": map[string]any{"team": "x"},
		"criteria": []any{map[string]any{"evaluator": "contains", "params": map[string]any{"values": []string{"hi"}}}},
		"cases":    []any{map[string]any{"id": "c1", "input": map[string]any{"message": "one"}}, map[string]any{"input": map[string]any{"message": "two"}}}})
	if ds.DatasetID == "" || ds.Version != 1 || ds.CaseCount != 2 || ds.Metadata["team"] != "x" {
		t.Fatalf("created %+v", ds)
	}
	base := "/datasets/" + ds.DatasetID
	var cs wire.DatasetCases
	e.must(200, &cs, "GET", base+"/cases", nil)
	ids := caseIDs(t, cs.Cases)
	if len(ids) != 2 || ids[0] != "c1=one" || !strings.HasSuffix(ids[1], "=two") || ids[1] == "=two" {
		t.Fatalf("cases %v (the second needs a generated ID)", ids)
	}

	// Bad input: an unknown evaluator, a misspelt case field, no input, a
	// case that is not an object, a taken name, an empty add.
	e.problem(422, "/criteria/0", "POST", "/datasets", map[string]any{"name": "n", "criteria": []any{map[string]any{"evaluator": "nope"}}})
	e.problem(422, "/cases/1", "POST", "/datasets", map[string]any{"name": "n", "cases": []any{map[string]any{"input": map[string]any{"message": "a"}}, map[string]any{"input": map[string]any{"message": "b"}, "expcet": map[string]any{}}}})
	e.problem(422, "/cases/0", "POST", "/datasets", map[string]any{"name": "n", "cases": []any{map[string]any{"id": "x"}}})
	e.problem(422, "/cases/0", "POST", "/datasets", map[string]any{"name": "n", "cases": []any{"text"}})
	e.problem(422, "/cases/0/criteria/0", "POST", "/datasets", map[string]any{"name": "n", "cases": []any{map[string]any{"input": map[string]any{"message": "a"}, "criteria": []any{map[string]any{"evaluator": "nope"}}}}})
	e.problem(422, "/cases/1/id", "POST", "/datasets", map[string]any{"name": "n", "cases": []any{map[string]any{"id": "d", "input": map[string]any{"message": "a"}}, map[string]any{"id": "d", "input": map[string]any{"message": "b"}}}})
	e.problem(422, "/name", "POST", "/datasets", map[string]any{})
	e.problem(409, "", "POST", "/datasets", map[string]any{"name": "qa"})
	e.problem(422, "/cases", "POST", base+"/cases", map[string]any{"cases": []any{}})
	e.problem(409, "", "POST", base+"/cases", map[string]any{"cases": []any{map[string]any{"id": "c1", "input": map[string]any{"message": "dup"}}}})

	// Version 2 adds c3, 3 edits c1, 4 removes the generated case.
	e.must(200, &ds, "POST", base+"/cases", map[string]any{"cases": []any{map[string]any{"id": "c3", "input": map[string]any{"message": "three"}}}})
	e.must(200, &ds, "PATCH", base+"/cases/c1", map[string]any{"input": map[string]any{"message": "ONE"}, "tags": []string{"edited"}})
	if ds.Version != 3 {
		t.Fatalf("after the edit: version %d, want 3", ds.Version)
	}
	e.problem(422, "/id", "PATCH", base+"/cases/c1", map[string]any{"id": "other"})
	e.problem(422, "", "PATCH", base+"/cases/c1", map[string]any{"input": map[string]any{"message": "a", "state": map[string]any{"x": 1}}})
	e.problem(404, "", "PATCH", base+"/cases/missing", map[string]any{"tags": []string{"x"}})
	gen := strings.TrimSuffix(ids[1], "=two")
	e.must(200, &ds, "DELETE", base+"/cases/"+gen, nil)
	if ds.Version != 4 || ds.CaseCount != 2 {
		t.Fatalf("after the removal: %+v", ds)
	}
	e.problem(404, "", "DELETE", base+"/cases/"+gen, nil)
	for v, want := range map[string]string{"1": "c1=one " + ids[1], "2": "c1=one " + ids[1] + " c3=three", "3": "c1=ONE " + ids[1] + " c3=three", "4": "c1=ONE c3=three"} {
		e.must(200, &cs, "GET", base+"/cases?version="+v, nil)
		if got := strings.Join(caseIDs(t, cs.Cases), " "); got != want || cs.Version != int(v[0]-'0') {
			t.Errorf("version %s: %s (v%d), want %s", v, got, cs.Version, want)
		}
	}
	if p := e.problem(404, "", "GET", base+"/cases?version=9", nil); !strings.Contains(p.Detail, "versions 1 to 4, not version 9") {
		t.Errorf("a missing version's 404 says %q; want which versions there are", p.Detail)
	}
	e.problem(422, "version", "GET", base+"/cases?version=x", nil)

	// Export: exactly the bytes eval.WriteDataset writes, and eval reads
	// them back.
	st, body := e.do("GET", base+"/export?version=3", nil)
	if st != 200 {
		t.Fatalf("export: %d %s", st, body)
	}
	read, err := eval.ReadDataset(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the export does not read: %v\n%s", err, body)
	}
	var want bytes.Buffer
	if err := eval.WriteDataset(&want, read); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, want.Bytes()) || read.Version != "3" || read.Name != "qa" || len(read.Cases) != 3 ||
		read.Cases[0].Tags[0] != "edited" || len(read.Criteria) != 1 || read.Criteria[0].Evaluator != "contains" {
		t.Fatalf("export:\n%s\nre-encoded:\n%s", body, want.Bytes())
	}

	// Import: the same file under another name is a new dataset at
	// version 1 with the same cases.
	imported := bytes.Replace(body, []byte(`"name":"qa"`), []byte(`"name":"qa copy"`), 1)
	var im wire.Dataset
	importAs(t, e, imported, NDJSON, 200, &im)
	if im.Name != "qa copy" || im.Version != 1 || im.CaseCount != 3 || im.Description != "questions" {
		t.Fatalf("imported %+v", im)
	}
	importAs(t, e, body, NDJSON, 409, nil)
	importAs(t, e, []byte(`{"name":"z","criteria":[{"evaluator":"nope"}]}`+"\n"+`{"id":"a","input":{"message":"m"}}`), NDJSON, 422, nil)
	importAs(t, e, []byte(`{"name":"z"}`+"\n"+`{"id":"a","input":{}}`), NDJSON, 422, nil)
	importAs(t, e, []byte("x"), "image/png", 415, nil)
	st, body = e.do("GET", "/datasets/"+im.DatasetID+"/export", nil)
	if st != 200 || !bytes.Contains(body, []byte(`"id":"c1"`)) {
		t.Fatalf("export of the import: %d %s", st, body)
	}

	// Search, rename, criteria, delete.
	var found []wire.Dataset
	e.must(200, &found, "POST", "/datasets/search", map[string]any{"name": "COPY"})
	if len(found) != 1 || found[0].DatasetID != im.DatasetID {
		t.Fatalf("search: %+v", found)
	}
	e.must(200, &found, "POST", "/datasets/search", map[string]any{"limit": 1, "offset": 1})
	if len(found) != 1 || found[0].DatasetID != ds.DatasetID {
		t.Fatalf("second page: %+v", found)
	}
	e.problem(422, "/limit", "POST", "/datasets/search", map[string]any{"limit": 0})
	e.problem(422, "", "POST", "/datasets/search", map[string]any{"nmae": "x"})
	e.must(200, &ds, "PATCH", base, map[string]any{"name": "qa2", "criteria": []any{}})
	if ds.Name != "qa2" || string(ds.Criteria) != "[]" || ds.Version != 4 {
		t.Fatalf("patched %+v", ds)
	}
	e.problem(409, "", "PATCH", base, map[string]any{"name": "qa copy"})
	e.problem(422, "/criteria/0", "PATCH", base, map[string]any{"criteria": []any{map[string]any{"evaluator": "nope"}}})
	e.must(204, nil, "DELETE", base, nil)
	e.problem(404, "", "GET", base, nil)
	e.problem(404, "", "GET", base+"/cases", nil)
	e.problem(404, "", "GET", base+"/export", nil)

	// Another tenant sees none of it.
	other := []string{resTenantHeader, "other"}
	e.problem(404, "", "GET", "/datasets/"+im.DatasetID, nil, other...)
	e.problem(404, "", "POST", "/datasets/"+im.DatasetID+"/cases", map[string]any{"cases": []any{map[string]any{"input": map[string]any{"message": "b"}}}}, other...)
	e.must(200, &found, "POST", "/datasets/search", map[string]any{}, other...)
	if len(found) != 0 {
		t.Fatalf("tenant other finds %+v", found)
	}
}

func importAs(t *testing.T, e *resEnv, body []byte, ctype string, want int, v any) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/datasets/import", bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("import (%s): %d %s, want %d", ctype, resp.StatusCode, b, want)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
}

// Feedback on a run: thumbs up with the default key, a scored correction,
// listed oldest first, deleted one by one; a missing run, a score out of
// range and another tenant are refused; deleting the thread deletes it.
func TestRunFeedbackRoutes(t *testing.T) {
	e := newResEnv(t, false)
	e.run(DefaultTenant, "t1", `{"log":["x"]}`)
	rs, err := e.db.ListRuns(context.Background(), DefaultTenant, "t1", db.RunQuery{})
	if err != nil || len(rs) != 1 {
		t.Fatalf("runs %v %v", rs, err)
	}
	base := "/threads/t1/runs/" + rs[0].ID + "/feedback"
	var up, fix wire.Feedback
	e.must(200, &up, "POST", base, map[string]any{"score": 1, "comment": "good", "message_id": "m1"})
	if up.Key != DefaultFeedbackKey || up.Score == nil || *up.Score != 1 || up.RunID != rs[0].ID || up.ThreadID != "t1" || up.FeedbackID == "" {
		t.Fatalf("created %+v", up)
	}
	e.must(200, &fix, "POST", base, map[string]any{"key": "correctness", "score": 0, "correction": map[string]any{"answer": "42"}, "value": "wrong"})
	var list []wire.Feedback
	e.must(200, &list, "GET", base, nil)
	if len(list) != 2 || list[0].FeedbackID != up.FeedbackID || list[1].Key != "correctness" || *list[1].Score != 0 ||
		string(list[1].Correction) != `{"answer":"42"}` || list[0].Comment != "good" || list[0].MessageID != "m1" {
		t.Fatalf("listed %+v", list)
	}
	e.problem(422, "/score", "POST", base, map[string]any{"score": 1.5})
	e.problem(422, "", "POST", base, map[string]any{"scroe": 1})
	e.problem(404, "", "POST", "/threads/t1/runs/nope/feedback", map[string]any{"score": 1})
	e.problem(404, "", "GET", "/threads/t1/runs/nope/feedback", nil)
	e.problem(404, "", "POST", "/threads/other/runs/"+rs[0].ID+"/feedback", map[string]any{"score": 1})
	other := []string{resTenantHeader, "other"}
	e.problem(404, "", "POST", base, map[string]any{"score": 0}, other...)
	e.problem(404, "", "GET", base, nil, other...)
	e.problem(404, "", "DELETE", base+"/"+up.FeedbackID, nil, other...)

	e.must(204, nil, "DELETE", base+"/"+up.FeedbackID, nil)
	e.problem(404, "", "DELETE", base+"/"+up.FeedbackID, nil)
	e.must(200, &list, "GET", base, nil)
	if len(list) != 1 || list[0].FeedbackID != fix.FeedbackID {
		t.Fatalf("after delete: %+v", list)
	}
	// The thread goes with its runs' feedback.
	if err := e.db.DeleteThread(context.Background(), DefaultTenant, "t1"); err != nil {
		t.Fatal(err)
	}
	e.problem(404, "", "GET", base, nil)
}
