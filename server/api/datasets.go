package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/eval"
	_ "github.com/trellis-agents/trellis/eval/evaluators" // the evaluator names criteria may use
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// datasetHandlers returns the handlers of the evaluation dataset routes:
// tenant-scoped datasets whose cases are versioned (server/db.Datasets),
// checked with the eval package.
func (a *API) datasetHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"createDataset":     http.HandlerFunc(a.createDataset),
		"searchDatasets":    http.HandlerFunc(a.searchDatasets),
		"importDataset":     http.HandlerFunc(a.importDataset),
		"getDataset":        http.HandlerFunc(a.getDataset),
		"patchDataset":      http.HandlerFunc(a.patchDataset),
		"deleteDataset":     http.HandlerFunc(a.deleteDataset),
		"addDatasetCases":   http.HandlerFunc(a.addDatasetCases),
		"listDatasetCases":  http.HandlerFunc(a.listDatasetCases),
		"patchDatasetCase":  http.HandlerFunc(a.patchDatasetCase),
		"deleteDatasetCase": http.HandlerFunc(a.deleteDatasetCase),
		"exportDataset":     http.HandlerFunc(a.exportDataset),
		"recordThreadCase":  http.HandlerFunc(a.recordThreadCase),
	}
}

func toWireDataset(d db.Dataset) wire.Dataset {
	out := wire.Dataset{DatasetID: d.ID, Name: d.Name, Description: d.Description, Metadata: wire.Metadata(d.Metadata),
		Criteria: d.Criteria, Version: d.Version, CaseCount: d.Cases, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
	if out.Metadata == nil {
		out.Metadata = wire.Metadata{}
	}
	if len(out.Criteria) == 0 {
		out.Criteria = json.RawMessage(`[]`)
	}
	return out
}

// checkCriteria decodes criteria with the eval package; errors point
// into the body at ptr.
func checkCriteria(ptr string, raw []json.RawMessage) ([]eval.Criterion, []wire.FieldError) {
	var out []eval.Criterion
	var errs []wire.FieldError
	for i, b := range raw {
		c, err := eval.DecodeCriterion(b)
		if err != nil {
			errs = append(errs, wire.FieldError{Pointer: fmt.Sprintf("%s/%d", ptr, i), Detail: err.Error()})
			continue
		}
		out = append(out, c)
	}
	return out, errs
}

// checkCase validates one case (an eval.Case object, given an ID when it
// has none) and returns it as stored: the JSON eval writes for it.
func checkCase(ptr string, raw json.RawMessage) (db.DatasetCase, []wire.FieldError) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return db.DatasetCase{}, []wire.FieldError{{Pointer: ptr, Detail: "must be a case object (docs/eval.md)"}}
	}
	if id, ok := members["id"]; !ok || string(id) == `""` || string(id) == "null" {
		members["id"], _ = json.Marshal(uuid.NewString())
		raw, _ = json.Marshal(members)
	}
	c, err := eval.DecodeCase(raw)
	if err != nil {
		return db.DatasetCase{}, []wire.FieldError{{Pointer: ptr, Detail: err.Error()}}
	}
	return storedCase(ptr, c)
}

// storedCase checks a decoded case's criteria and encodes it for the
// store.
func storedCase(ptr string, c eval.Case) (db.DatasetCase, []wire.FieldError) {
	var errs []wire.FieldError
	for i, cr := range c.Criteria {
		if _, err := eval.New(cr); err != nil {
			errs = append(errs, wire.FieldError{Pointer: fmt.Sprintf("%s/criteria/%d", ptr, i), Detail: err.Error()})
		}
	}
	if errs != nil {
		return db.DatasetCase{}, errs
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return db.DatasetCase{}, []wire.FieldError{{Pointer: ptr, Detail: err.Error()}}
	}
	return db.DatasetCase{ID: c.ID, Data: b}, nil
}

// checkCases validates a body's cases, answering 422 naming each bad one.
func checkCases(w http.ResponseWriter, r *http.Request, raw []json.RawMessage) ([]db.DatasetCase, bool) {
	var out []db.DatasetCase
	var errs []wire.FieldError
	seen := map[string]int{}
	for i, b := range raw {
		ptr := fmt.Sprintf("/cases/%d", i)
		c, e := checkCase(ptr, b)
		if e != nil {
			errs = append(errs, e...)
			continue
		}
		if prev, dup := seen[c.ID]; dup {
			errs = append(errs, wire.FieldError{Pointer: ptr + "/id", Detail: fmt.Sprintf("repeats the ID of /cases/%d", prev)})
			continue
		}
		seen[c.ID] = i
		out = append(out, c)
	}
	if len(out) > db.MaxDatasetCases {
		errs = append(errs, wire.FieldError{Pointer: "/cases", Detail: fmt.Sprintf("a dataset holds at most %d cases", db.MaxDatasetCases)})
	}
	if errs != nil {
		wire.Invalid(errs...).Write(w, r)
		return nil, false
	}
	return out, true
}

func criteriaJSON(cs []eval.Criterion) json.RawMessage {
	if cs == nil {
		cs = []eval.Criterion{}
	}
	b, _ := json.Marshal(cs) // criteria always encode
	return b
}

func (a *API) createDataset(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.DatasetCreate](a, w, r)
	if !ok {
		return
	}
	crit, errs := checkCriteria("/criteria", b.Criteria)
	if errs != nil {
		wire.Invalid(errs...).Write(w, r)
		return
	}
	cases, ok := checkCases(w, r, b.Cases)
	if !ok {
		return
	}
	d, err := a.DB.CreateDataset(r.Context(), a.tenant(r), db.Dataset{Name: b.Name, Description: b.Description,
		Metadata: db.Metadata(b.Metadata), Criteria: criteriaJSON(crit)}, cases)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireDataset(d))
}

func (a *API) searchDatasets(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.DatasetSearch](a, w, r)
	if !ok {
		return
	}
	q := db.DatasetQuery{Name: b.Name, Offset: b.Offset, Limit: wire.DefaultLimit}
	if b.Limit != nil {
		q.Limit = *b.Limit
	}
	found, err := a.DB.SearchDatasets(r.Context(), a.tenant(r), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]wire.Dataset, len(found))
	for i, d := range found {
		out[i] = toWireDataset(d)
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) getDataset(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "dataset_id")
	if !ok {
		return
	}
	d, err := a.DB.GetDataset(r.Context(), a.tenant(r), id)
	if err != nil {
		a.notFoundOr(w, r, err, "dataset", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireDataset(d))
}

func (a *API) patchDataset(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "dataset_id")
	if !ok {
		return
	}
	b, ok := decodeBody[wire.DatasetPatch](a, w, r)
	if !ok {
		return
	}
	p := db.DatasetPatch{Name: b.Name, Description: b.Description, Metadata: db.Metadata(b.Metadata)}
	if b.Criteria != nil {
		crit, errs := checkCriteria("/criteria", b.Criteria)
		if errs != nil {
			wire.Invalid(errs...).Write(w, r)
			return
		}
		p.Criteria = criteriaJSON(crit)
	}
	d, err := a.DB.UpdateDataset(r.Context(), a.tenant(r), id, p)
	if err != nil {
		a.notFoundOr(w, r, err, "dataset", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireDataset(d))
}

func (a *API) deleteDataset(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "dataset_id")
	if !ok {
		return
	}
	if err := a.DB.DeleteDataset(r.Context(), a.tenant(r), id); err != nil {
		a.notFoundOr(w, r, err, "dataset", id)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) addDatasetCases(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "dataset_id")
	if !ok {
		return
	}
	b, ok := decodeBody[wire.DatasetCasesAdd](a, w, r)
	if !ok {
		return
	}
	cases, ok := checkCases(w, r, b.Cases)
	if !ok {
		return
	}
	d, err := a.DB.AddCases(r.Context(), a.tenant(r), id, cases)
	if err != nil {
		a.notFoundOr(w, r, err, "dataset", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireDataset(d))
}

func (a *API) listDatasetCases(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "dataset_id")
	if !ok {
		return
	}
	q, ok := decodeQuery[wire.DatasetCasesQuery](w, r)
	if !ok {
		return
	}
	d, cases, err := a.datasetAt(r, id, q.Version)
	if err != nil {
		a.datasetReadFailed(w, r, err, id)
		return
	}
	out := wire.DatasetCases{DatasetID: id, Version: d.Version, Cases: make([]json.RawMessage, len(cases))}
	for i, c := range cases {
		out.Cases[i] = c.Data
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

// noVersionError is a version a dataset does not have (yet).
type noVersionError struct {
	id              string
	version, latest int
}

func (e noVersionError) Error() string {
	return fmt.Sprintf("dataset %q has versions 1 to %d, not version %d; leave version out for the latest", e.id, e.latest, e.version)
}

// datasetReadFailed answers a failed datasetAt: 404 for a missing
// dataset or version, saying which.
func (a *API) datasetReadFailed(w http.ResponseWriter, r *http.Request, err error, id string) {
	var nv noVersionError
	if errors.As(err, &nv) {
		wire.NewProblem(http.StatusNotFound, nv.Error()).Write(w, r)
		return
	}
	a.notFoundOr(w, r, err, "dataset", id)
}

// datasetAt reads a dataset and its cases as of version (0: the latest);
// the returned dataset's Version is the version read.
func (a *API) datasetAt(r *http.Request, id string, version int) (db.Dataset, []db.DatasetCase, error) {
	tenant := a.tenant(r)
	d, err := a.DB.GetDataset(r.Context(), tenant, id)
	if err != nil {
		return d, nil, err
	}
	if version == 0 {
		version = d.Version
	}
	if version > d.Version {
		return d, nil, noVersionError{id: id, version: version, latest: d.Version}
	}
	cases, err := a.DB.DatasetCases(r.Context(), tenant, id, version)
	d.Version = version
	return d, cases, err
}

func (a *API) patchDatasetCase(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "dataset_id")
	if !ok {
		return
	}
	caseID, ok := pathID(w, r, "case_id")
	if !ok {
		return
	}
	patch, ok := decodeBody[map[string]json.RawMessage](a, w, r)
	if !ok {
		return
	}
	cases, err := a.DB.DatasetCases(r.Context(), a.tenant(r), id, 0)
	if err != nil {
		a.notFoundOr(w, r, err, "dataset", id)
		return
	}
	var members map[string]json.RawMessage
	for _, c := range cases {
		if c.ID == caseID {
			if err := json.Unmarshal(c.Data, &members); err != nil {
				a.fail(w, r, fmt.Errorf("dataset %s: stored case %s: %w", id, caseID, err))
				return
			}
		}
	}
	if members == nil {
		wire.NotFound("case", caseID).Write(w, r)
		return
	}
	if newID, ok := patch["id"]; ok && string(newID) != strconv.Quote(caseID) {
		wire.Invalid(wire.FieldError{Pointer: "/id", Detail: fmt.Sprintf("a case keeps its ID %q; add a new case instead", caseID)}).Write(w, r)
		return
	}
	for k, v := range patch {
		if string(v) == "null" {
			delete(members, k)
		} else {
			members[k] = v
		}
	}
	merged, _ := json.Marshal(members)
	c, errs := checkCase("", merged)
	if errs != nil {
		wire.Invalid(errs...).Write(w, r)
		return
	}
	d, err := a.DB.ReplaceCase(r.Context(), a.tenant(r), id, c)
	if err != nil {
		a.notFoundOr(w, r, err, "case", caseID)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireDataset(d))
}

func (a *API) deleteDatasetCase(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "dataset_id")
	if !ok {
		return
	}
	caseID, ok := pathID(w, r, "case_id")
	if !ok {
		return
	}
	d, err := a.DB.RemoveCase(r.Context(), a.tenant(r), id, caseID)
	if err != nil {
		a.notFoundOr(w, r, err, "case", caseID)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireDataset(d))
}

// NDJSON is the media type of the Trellis JSONL a dataset exports and
// imports.
const NDJSON = "application/x-ndjson"

func (a *API) exportDataset(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "dataset_id")
	if !ok {
		return
	}
	q, ok := decodeQuery[wire.DatasetExportQuery](w, r)
	if !ok {
		return
	}
	d, cases, err := a.datasetAt(r, id, q.Version)
	if err != nil {
		a.datasetReadFailed(w, r, err, id)
		return
	}
	ds := &eval.Dataset{Name: d.Name, Version: strconv.Itoa(d.Version), Description: d.Description}
	if err := json.Unmarshal(d.Criteria, &ds.Criteria); err != nil {
		a.fail(w, r, fmt.Errorf("dataset %s: stored criteria: %w", id, err))
		return
	}
	for _, c := range cases {
		var ec eval.Case
		if err := json.Unmarshal(c.Data, &ec); err != nil {
			a.fail(w, r, fmt.Errorf("dataset %s: stored case %s: %w", id, c.ID, err))
			return
		}
		ds.Cases = append(ds.Cases, ec)
	}
	var buf bytes.Buffer
	if err := eval.WriteDataset(&buf, ds); err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", NDJSON)
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", d.Name+".jsonl"))
	_, _ = w.Write(buf.Bytes())
}

// importTypes are the media types POST /datasets/import reads as JSONL.
var importTypes = map[string]bool{NDJSON: true, "application/jsonl": true, "application/json": true, "text/plain": true, "": true}

func (a *API) importDataset(w http.ResponseWriter, r *http.Request) {
	ct := r.Header.Get("Content-Type")
	if ct != "" {
		ct, _, _ = mime.ParseMediaType(ct)
	}
	if !importTypes[ct] {
		wire.NewProblem(http.StatusUnsupportedMediaType, fmt.Sprintf("the body is Trellis JSONL; send Content-Type %s, not %q", NDJSON, ct)).Write(w, r)
		return
	}
	limit := a.BodyLimit
	if limit <= 0 {
		limit = wire.DefaultBodyLimit
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		wire.BadRequest("reading the body failed: "+err.Error()).Write(w, r)
		return
	}
	if int64(len(body)) > limit {
		wire.NewProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", limit)).Write(w, r)
		return
	}
	ds, err := eval.ReadDataset(bytes.NewReader(body))
	if err != nil {
		var le *eval.LineError
		ptr := ""
		if errors.As(err, &le) {
			ptr = fmt.Sprintf("/line/%d", le.Line)
		}
		wire.Invalid(wire.FieldError{Pointer: ptr, Detail: err.Error()}).Write(w, r)
		return
	}
	var errs []wire.FieldError
	for i, c := range ds.Criteria {
		if _, err := eval.New(c); err != nil {
			errs = append(errs, wire.FieldError{Pointer: fmt.Sprintf("/line/1/criteria/%d", i), Detail: err.Error()})
		}
	}
	if len(ds.Cases) > db.MaxDatasetCases {
		errs = append(errs, wire.FieldError{Pointer: "", Detail: fmt.Sprintf("a dataset holds at most %d cases, this one %d", db.MaxDatasetCases, len(ds.Cases))})
	}
	cases := make([]db.DatasetCase, 0, len(ds.Cases))
	for i, c := range ds.Cases {
		sc, e := storedCase(fmt.Sprintf("/cases/%d", i), c)
		errs = append(errs, e...)
		cases = append(cases, sc)
	}
	if errs != nil {
		wire.Invalid(errs...).Write(w, r)
		return
	}
	d, err := a.DB.CreateDataset(r.Context(), a.tenant(r), db.Dataset{Name: ds.Name, Description: ds.Description,
		Metadata: db.Metadata(ds.Metadata), Criteria: criteriaJSON(ds.Criteria)}, cases)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireDataset(d))
}
