package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// call is how the isolation test calls one operation as tenant B.
type call struct {
	body  string // JSON body ("" : none)
	query string // raw query ("" : none)
	// want is the status B must get (0: 404 for routes with path
	// parameters, else any non-5xx whose success body holds none of A's
	// data).
	want int
}

// tenantA is what tenant A owns in the isolation test.
type tenantA struct {
	assistant, thread, run, checkpoint, namespace, marker, cron string
	dataset, caseID, feedback, experiment                       string
}

// ids are the strings of A's that no answer to B may contain.
func (a tenantA) ids() []string {
	return []string{a.assistant, a.thread, a.run, a.checkpoint, a.namespace, a.marker, a.cron, a.dataset, a.caseID, a.feedback, a.experiment}
}

// isolationCalls says how to call each operation as B, by operation ID,
// filled with A's IDs. An operation the server serves but this table
// lacks fails the test when it needs a body or a required query
// parameter: add it here.
func isolationCalls(a tenantA) map[string][]call {
	input := fmt.Sprintf(`{"assistant_id":%q,"input":{"log":["b"]}}`, a.assistant)
	byMarker := fmt.Sprintf(`{"metadata":{"owner":%q}}`, a.marker)
	return map[string][]call{
		"createAssistant":            {{body: `{"graph_id":"echo","name":"B's"}`}},
		"searchAssistants":           {{body: byMarker}, {body: `{}`}},
		"countAssistants":            {{body: byMarker}},
		"patchAssistant":             {{body: `{"name":"B was here"}`}},
		"listAssistantVersions":      {{body: `{}`}},
		"setLatestAssistantVersion":  {{body: `{"version":1}`}},
		"createThread":               {{body: `{}`}},
		"searchThreads":              {{body: byMarker}, {body: fmt.Sprintf(`{"ids":[%q]}`, a.thread)}, {body: `{}`}},
		"countThreads":               {{body: byMarker}},
		"pruneThreads":               {{body: fmt.Sprintf(`{"thread_ids":[%q]}`, a.thread)}},
		"patchThread":                {{body: `{"metadata":{"b":1}}`}},
		"updateThreadState":          {{body: `{"values":{"log":["b"]}}`}},
		"patchThreadState":           {{body: `{"metadata":{"b":1}}`}},
		"getThreadStateAtCheckpoint": {{body: fmt.Sprintf(`{"checkpoint":{"checkpoint_id":%q}}`, a.checkpoint)}},
		"getThreadHistory":           {{body: `{}`}},
		"copyThread":                 {{}},
		"createRun":                  {{body: input}},
		"streamRun":                  {{body: input}},
		"waitRun":                    {{body: input}},
		// A's assistant does not exist for B.
		"createStatelessRun": {{body: input, want: 404}},
		"streamStatelessRun": {{body: input, want: 404}},
		"waitStatelessRun":   {{body: input, want: 404}},
		"createRunBatch":     {{body: "[" + input + "]", want: 404}},
		"cancelRuns":         {{body: fmt.Sprintf(`{"thread_id":%q,"run_ids":[%q]}`, a.thread, a.run)}},
		"putStoreItem":       {{body: `{"namespace":["b"],"key":"k","value":{"v":1}}`}},
		// A missing item is 200 null, as LangGraph answers.
		"getStoreItem":        {{query: "namespace=" + a.namespace + "&key=k", want: 200}},
		"deleteStoreItem":     {{body: fmt.Sprintf(`{"namespace":[%q],"key":"k"}`, a.namespace)}},
		"searchStoreItems":    {{body: fmt.Sprintf(`{"namespace_prefix":[%q]}`, a.namespace)}, {body: `{}`}},
		"listStoreNamespaces": {{body: `{}`}},
		// The OpenAI wire: A's assistant is no model of B's; its errors are
		// OpenAI's JSON, not problems.
		"createChatCompletion": {{body: fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, a.assistant), want: 404}},
		// MCP: without a session B reaches nothing (the JSON-RPC calls need
		// one; server/mcp_test.go walks a session of B's).
		"mcpPost":   {{body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, want: 400}},
		"mcpGet":    {{want: 400}},
		"mcpDelete": {{want: 400}},
		// The AG-UI wire: A's assistant does not exist for B (A's thread
		// ID in the body would be B's own thread).
		"runAgUI": {{body: fmt.Sprintf(`{"threadId":%q,"runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`, a.thread), want: 404}},
		// The A2A wire: A's assistant is no agent of B's (its card and
		// endpoint are 404); B's own card names none of A's (server/a2a_test.go
		// asks for A's task through B's agent).
		"a2aJSONRPC":      {{body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, want: 404}},
		"getA2AAgentCard": {{}, {query: "assistant_id=" + url.QueryEscape(a.assistant), want: 404}},
		"a2aRESTPost":     {{body: `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, want: 404}},
		// Crons: A's assistant and thread do not exist for B; searches and
		// counts see none of A's crons.
		"createCron":       {{body: fmt.Sprintf(`{"assistant_id":%q,"schedule":"0 0 1 1 *"}`, a.assistant), want: 404}},
		"createThreadCron": {{body: fmt.Sprintf(`{"assistant_id":%q,"schedule":"0 0 1 1 *"}`, a.assistant)}},
		"searchCrons":      {{body: `{}`}, {body: fmt.Sprintf(`{"thread_id":%q}`, a.thread)}, {body: byMarker}},
		"countCrons":       {{body: `{}`}, {body: byMarker}},
		"updateCron":       {{body: `{"schedule":"0 1 * * *"}`}},
		// Datasets and feedback: B's searches find none of A's datasets;
		// B's own creations and imports are B's.
		"createDataset":     {{body: `{"name":"B's","cases":[{"input":{"message":"b"}}]}`}},
		"searchDatasets":    {{body: `{}`}, {body: fmt.Sprintf(`{"name":%q}`, a.marker)}},
		"importDataset":     {{body: "{\"name\":\"B's import\"}\n{\"id\":\"b1\",\"input\":{\"message\":\"b\"}}\n"}},
		"patchDataset":      {{body: `{"description":"B was here"}`}},
		"addDatasetCases":   {{body: `{"cases":[{"input":{"message":"b"}}]}`}},
		"patchDatasetCase":  {{body: `{"tags":["b"]}`}},
		"createRunFeedback": {{body: `{"score":0,"comment":"B was here"}`}},
		// Experiments: A's dataset and assistant do not exist for B.
		"createExperiment": {{body: fmt.Sprintf(`{"dataset_id":%q,"assistant_id":%q,"repetitions":1}`, a.dataset, a.assistant), want: 422}},
		"listExperiments":  {{}, {query: "dataset_id=" + a.dataset}, {query: "assistant_id=" + a.assistant}},
	}
}

// operational are the mux's routes outside the API's document, by mux
// pattern, with the path the walk requests: the service's metrics and the
// web page with its assets (the page's data calls are API routes). They
// are walked like the others: no answer may hold A's data.
var operational = map[string]string{"/metrics": "/metrics", "GET /{$}": "/", "GET /ui/": "/ui/app.js"}

// openAPIOp is what the test reads of an operation in /openapi.json.
type openAPIOp struct {
	OperationID string          `json:"operationId"`
	RequestBody json.RawMessage `json:"requestBody"`
	Parameters  []struct {
		Name     string `json:"name"`
		In       string `json:"in"`
		Required bool   `json:"required"`
	} `json:"parameters"`
}

var pathParam = regexp.MustCompile(`\{([^}.]+)(\.\.\.)?\}`)

// Tenant B, with its own key, walks every route registered on the
// server's mux with the path parameters filled from tenant A's real
// assistant, thread, run, checkpoint and store item: every route with a
// path parameter answers 404 (not 403, not data), and no list, search or
// count answers with any of A's rows. The mux's routes must be exactly the
// OpenAPI document's; a route the test does not know how to call fails
// it. Afterwards A's data is unchanged.
func TestTenantIsolationEveryRoute(t *testing.T) {
	walkAsOtherTenant(t, filepath.Join(t.TempDir(), "t.db"))
}

// The same walk on PostgreSQL (TRELLIS_TEST_PG_DSN, a fresh schema).
func TestTenantIsolationEveryRoutePostgres(t *testing.T) {
	url, _, _ := pgSchema(t, "auth")
	walkAsOtherTenant(t, url)
}

func walkAsOtherTenant(t *testing.T, database string) {
	keyA, keyB := mkKey(t, database, "tenant-a"), mkKey(t, database, "tenant-b")
	r := start(t, Config{Database: database, DataDir: t.TempDir()}, nil)
	as := func(key string) client { return client{t: t, base: r.url, key: key} }
	A, B := as(keyA), as(keyB)

	// Tenant A's data.
	var a tenantA
	a.marker = "secret-of-a-" + uuid.NewString()[:8]
	a.namespace = "ns-" + uuid.NewString()[:8]
	code, body, _ := A.do("POST", "/assistants", "", fmt.Sprintf(`{"graph_id":"echo","name":"A's","metadata":{"owner":%q}}`, a.marker))
	a.assistant = field(t, code, body, "assistant_id")
	code, body, _ = A.do("POST", "/threads", "", fmt.Sprintf(`{"metadata":{"owner":%q}}`, a.marker))
	a.thread = field(t, code, body, "thread_id")
	code, body, hdr := A.do("POST", "/threads/"+a.thread+"/runs/wait", "", fmt.Sprintf(`{"assistant_id":%q,"input":{"log":[%q]}}`, a.assistant, a.marker))
	if code != 200 {
		t.Fatalf("A's run: %d %s", code, body)
	}
	a.run = hdr.Get("Content-Location")[strings.LastIndex(hdr.Get("Content-Location"), "/")+1:]
	code, body, _ = A.do("GET", "/threads/"+a.thread+"/state", "", "")
	var st struct {
		Checkpoint struct {
			ID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || st.Checkpoint.ID == "" || a.run == "" {
		t.Fatalf("A's state: %d %s (run %q)", code, body, a.run)
	}
	a.checkpoint = st.Checkpoint.ID
	if code, body, _ := A.do("PUT", "/store/items", "", fmt.Sprintf(`{"namespace":[%q],"key":"k","value":{"owner":%q}}`, a.namespace, a.marker)); code != 204 {
		t.Fatalf("A's store item: %d %s", code, body)
	}
	code, body, _ = A.do("POST", "/threads/"+a.thread+"/runs/crons", "", fmt.Sprintf(`{"assistant_id":%q,"schedule":"0 0 1 1 *","metadata":{"owner":%q}}`, a.assistant, a.marker))
	a.cron = field(t, code, body, "cron_id")
	a.caseID = "case-of-a-" + uuid.NewString()[:8]
	code, body, _ = A.do("POST", "/datasets", "", fmt.Sprintf(`{"name":"set %s","criteria":[{"evaluator":"contains","params":{"values":["echo hi"]}}],"cases":[{"id":%q,"input":{"state":{"log":["hi"]}}}]}`, a.marker, a.caseID))
	a.dataset = field(t, code, body, "dataset_id")
	code, body, _ = A.do("POST", "/experiments", "", fmt.Sprintf(`{"dataset_id":%q,"assistant_id":%q,"repetitions":1,"metadata":{"owner":%q}}`, a.dataset, a.assistant, a.marker))
	if code != 201 {
		t.Fatalf("A's experiment: %d %s", code, body)
	}
	a.experiment = field(t, 200, body, "experiment_id")
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body, _ = A.do("GET", "/experiments/"+a.experiment, "", "")
		if st := field(t, code, body, "status"); st == "success" {
			break
		} else if st == "error" || time.Now().After(end) {
			t.Fatalf("A's experiment: %s", body)
		}
	}
	code, body, _ = A.do("POST", "/threads/"+a.thread+"/runs/"+a.run+"/feedback", "", `{"score":1,"comment":"A's"}`)
	a.feedback = field(t, code, body, "feedback_id")
	before := A.snapshot(a)

	// The mux's routes and the document's operations agree.
	code, body, _ = A.do("GET", "/openapi.json", "", "")
	var doc struct {
		Paths map[string]map[string]openAPIOp `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); code != 200 || err != nil {
		t.Fatalf("/openapi.json: %d %v", code, err)
	}
	ops := map[string]openAPIOp{}
	for path, methods := range doc.Paths {
		for m, op := range methods {
			ops[strings.ToUpper(m)+" "+path] = op
		}
	}
	r.s.mu.Lock()
	patterns := slices.Clone(r.s.mux.patterns)
	r.s.mu.Unlock()
	var walked []string
	for _, p := range patterns {
		if p == "/" {
			continue // the problem fallback
		}
		if path, ok := operational[p]; ok {
			walked = append(walked, "GET "+path)
			ops["GET "+path] = openAPIOp{OperationID: p}
			continue
		}
		if _, ok := ops[p]; !ok {
			t.Errorf("the mux serves %q, which /openapi.json does not document", p)
			continue
		}
		walked = append(walked, p)
	}
	for p := range ops {
		if _, op := operational[ops[p].OperationID]; !slices.Contains(patterns, p) && !op {
			t.Errorf("/openapi.json documents %q, which the mux does not serve", p)
		}
	}

	calls := isolationCalls(a)
	fill := map[string]string{"assistant_id": a.assistant, "assistant": a.assistant, "thread_id": a.thread, "run_id": a.run, "checkpoint_id": a.checkpoint, "namespace": "sub", "cron_id": a.cron,
		"dataset_id": a.dataset, "case_id": a.caseID, "feedback_id": a.feedback, "experiment_id": a.experiment, "path": "tasks"}
	for _, p := range walked {
		op := ops[p]
		method, path, _ := strings.Cut(p, " ")
		public := publicPaths[p]
		hasParams := false
		unknown := false
		path = pathParam.ReplaceAllStringFunc(path, func(m string) string {
			name := pathParam.FindStringSubmatch(m)[1]
			hasParams = true
			v, ok := fill[name]
			if !ok {
				t.Errorf("%s: the isolation test cannot fill the path parameter {%s}; add it to fill", p, name)
				unknown = true
			}
			return url.PathEscape(v)
		})
		cs, known := calls[op.OperationID]
		if !known {
			needs := len(op.RequestBody) > 0
			for _, q := range op.Parameters {
				needs = needs || (q.In == "query" && q.Required)
			}
			if needs {
				t.Errorf("%s (%s): the isolation test does not know how to call it; add it to isolationCalls", p, op.OperationID)
				continue
			}
			cs = []call{{}}
		}
		if unknown {
			continue
		}
		for _, c := range cs {
			code, body, hdr := B.do(method, path, c.query, c.body)
			what := fmt.Sprintf("B: %s %s?%s %s", method, path, c.query, c.body)
			switch {
			case c.want != 0:
				if code != c.want {
					t.Errorf("%s: %d %s, want %d", what, code, body, c.want)
				}
			case hasParams && !public:
				if code != http.StatusNotFound {
					t.Errorf("%s: %d %s, want 404", what, code, body)
				}
			case code >= 500:
				t.Errorf("%s: %d %s", what, code, body)
			}
			if code >= 400 && !strings.Contains(hdr.Get("Content-Type"), "problem+json") && !(strings.HasPrefix(path, "/v1/") && strings.Contains(hdr.Get("Content-Type"), "application/json")) {
				t.Errorf("%s: %d with Content-Type %q, want a problem", what, code, hdr.Get("Content-Type"))
			}
			if code < 300 {
				for _, id := range a.ids() {
					if strings.Contains(body, id) {
						t.Errorf("%s: the answer holds A's %q:\n%s", what, id, body)
					}
				}
				if n, err := fmt.Sscan(strings.TrimSpace(body), new(int)); err == nil && n == 1 && strings.TrimSpace(body) != "0" && strings.Contains(c.body, a.marker) {
					t.Errorf("%s: count %s, want 0 (A's rows counted)", what, body)
				}
			}
		}
	}
	if len(walked) < 40 {
		t.Errorf("walked %d routes; the route table has more", len(walked))
	}

	// Nothing B did reached A's data.
	if after := A.snapshot(a); after != before {
		t.Errorf("A's data changed during B's walk:\nbefore %s\nafter  %s", before, after)
	}
}

// client calls the server with an API key.
type client struct {
	t    *testing.T
	base string
	key  string
}

func (c client) do(method, path, query, body string) (int, string, http.Header) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := c.base + path
	if query != "" {
		u += "?" + query
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// snapshot is A's data as A reads it.
func (c client) snapshot(a tenantA) string {
	c.t.Helper()
	var parts []string
	for _, get := range []string{
		"/assistants/" + a.assistant, "/threads/" + a.thread, "/threads/" + a.thread + "/runs/" + a.run,
		"/threads/" + a.thread + "/state", "/threads/" + a.thread + "/runs", "/store/items?namespace=" + a.namespace + "&key=k",
		"/datasets/" + a.dataset, "/datasets/" + a.dataset + "/cases", "/threads/" + a.thread + "/runs/" + a.run + "/feedback",
		"/experiments/" + a.experiment, "/experiments/" + a.experiment + "/results",
	} {
		path, query, _ := strings.Cut(get, "?")
		code, body, _ := c.do("GET", path, query, "")
		if code != 200 {
			c.t.Errorf("A: GET %s: %d %s", get, code, body)
		}
		parts = append(parts, body)
	}
	return strings.Join(parts, "\n")
}

// field returns a string field of a 200 JSON answer.
func field(t *testing.T, code int, body, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); code != 200 || err != nil {
		t.Fatalf("%d %s (%v)", code, body, err)
	}
	s, _ := m[name].(string)
	if s == "" {
		t.Fatalf("no %s in %s", name, body)
	}
	return s
}

// mkKey creates an API key for tenant in the database file.
func mkKey(t *testing.T, database, tenant string) string {
	t.Helper()
	k, err := OpenKeys(context.Background(), database)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	secret, _, err := k.Create(context.Background(), tenant, "test")
	if err != nil {
		t.Fatal(err)
	}
	return secret
}
