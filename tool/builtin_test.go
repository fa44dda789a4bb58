package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

func TestStopped(t *testing.T) {
	stop := func(args string) llm.ToolCall { return call("s", tool.StopName, args) }
	cases := []struct {
		name   string
		msgs   []llm.Message
		answer string
		ok     bool
	}{
		{"empty", nil, "", false},
		{"no calls", []llm.Message{llm.User("hi"), llm.Assistant("hello")}, "", false},
		{"other calls", []llm.Message{llm.Assistant("", call("a", "echo", `{}`))}, "", false},
		{"stop", []llm.Message{llm.Assistant("", stop(`{"answer":"42"}`))}, "42", true},
		{"stop, then its result", []llm.Message{llm.Assistant("", stop(`{"answer":"42"}`)), llm.ToolResult(stop(""), "Stopped.")}, "42", true},
		{"stop with bad arguments", []llm.Message{llm.Assistant("", stop(`{"answer":5}`))}, "", false},
		{"stop without an answer", []llm.Message{llm.Assistant("", stop(`{}`))}, "", false},
		{"stop in an earlier turn", []llm.Message{llm.Assistant("", stop(`{"answer":"old"}`)), llm.User("more"), llm.Assistant("sure")}, "", false},
	}
	for _, tc := range cases {
		answer, ok := tool.Stopped(tc.msgs)
		if answer != tc.answer || ok != tc.ok {
			t.Errorf("%s: Stopped = %q, %v; want %q, %v", tc.name, answer, ok, tc.answer, tc.ok)
		}
	}
	st := tool.Stop()
	if info := st.Info(); info.Name != tool.StopName || !info.ReadOnly {
		t.Errorf("stop info = %+v", info)
	}
	if _, err := st.Call(context.Background(), json.RawMessage(`{"answer":"x"}`)); err != nil {
		t.Error(err)
	}
}

func TestModelTool(t *testing.T) {
	m := &fakeModel{replies: []llm.Message{llm.Assistant("the summary"), llm.Assistant("")}}
	temp := 0.5
	mt, err := tool.ModelTool(tool.ModelToolConfig{Name: "summarize", Model: m, System: "You summarize.", MaxTokens: 100, Temperature: &temp})
	if err != nil {
		t.Fatal(err)
	}
	if info := mt.Info(); info.Name != "summarize" || !info.ReadOnly || info.Description == "" {
		t.Errorf("info = %+v", info)
	}
	got, err := mt.Call(context.Background(), json.RawMessage(`{"task":"summarize this"}`))
	if err != nil || got != "the summary" {
		t.Fatalf("Call = %q, %v", got, err)
	}
	req := m.request(0)
	if len(req.Messages) != 2 || req.Messages[0].Role != llm.RoleSystem || req.Messages[0].Text() != "You summarize." ||
		req.Messages[1].Text() != "summarize this" || req.MaxTokens != 100 || *req.Temperature != 0.5 || len(req.Tools) != 0 {
		t.Errorf("request = %+v", req)
	}
	if _, err := mt.Call(context.Background(), json.RawMessage(`{"task":"again"}`)); err == nil || !strings.Contains(err.Error(), "gave no text answer") {
		t.Errorf("empty reply: err = %v", err)
	}
	if _, err := mt.Call(context.Background(), json.RawMessage(`{"task":"  "}`)); !tool.IsArgumentError(err) {
		t.Errorf("empty task: err = %v; want an argument error", err)
	}
	m.err = errors.New("overloaded")
	if _, err := mt.Call(context.Background(), json.RawMessage(`{"task":"x"}`)); err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("model error: err = %v", err)
	}
	if _, err := tool.ModelTool(tool.ModelToolConfig{}); err == nil || !strings.Contains(err.Error(), "Model is nil") {
		t.Errorf("no model: err = %v", err)
	}
	def, _ := tool.ModelTool(tool.ModelToolConfig{Model: m})
	if def.Info().Name != "ask_model" {
		t.Errorf("default name = %q", def.Info().Name)
	}
}

// A sub-model's usage is recorded on the tool task, like a model node's.
func TestModelToolInGraph(t *testing.T) {
	sub := &fakeModel{replies: []llm.Message{llm.Assistant("sub answer")}}
	mt, _ := tool.ModelTool(tool.ModelToolConfig{Model: sub})
	m := &fakeModel{replies: []llm.Message{llm.Assistant("", call("c1", "ask_model", `{"task":"t"}`))}}
	res, err := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{mt}})).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"c1:sub answer"}, summarize(msgsKey.Get(res.State))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if res.Usage().Requests != 3 {
		t.Errorf("usage counts %d requests; want 3 (two model turns and the sub-call)", res.Usage().Requests)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFileReaderLocal(t *testing.T) {
	dir := t.TempDir()
	files := []string{
		writeFile(t, dir, "notes.txt", "plain notes"),
		writeFile(t, dir, "readme.md", "# Title\n\nbody"),
		writeFile(t, dir, "data.json", `{"a":[1,2],"b":"x"}`),
		writeFile(t, dir, "table.csv", "name,qty\nbolt,3\n\"nut, hex\",4|5\nwasher\n"),
		writeFile(t, dir, "image.png", "\x89PNG"),
		writeFile(t, dir, "big.txt", strings.Repeat("x", 200)),
		writeFile(t, dir, "latin1.txt", "caf\xe9"),
		filepath.Join(dir, "missing.txt"),
		dir,
		writeFile(t, dir, "broken.json", `{"a":`),
	}
	rd, err := tool.FileReader(tool.FileReaderConfig{Files: files, MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if d := rd.Info().Description; !strings.Contains(d, "1. notes.txt") || strings.Contains(d, dir) {
		t.Errorf("description should list files by base name: %s", d)
	}
	cases := []struct {
		args    string
		want    string // result, or error text when err
		wantErr bool
	}{
		{`{"index":1}`, "File 1: notes.txt (text)\n\nplain notes", false},
		{`{"index":2}`, "File 2: readme.md (Markdown)\n\n# Title\n\nbody", false},
		{`{"index":3}`, "File 3: data.json (JSON)\n\n{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"x\"\n}", false},
		{`{"index":4}`, "File 4: table.csv (CSV, 3 rows and 2 columns, the first row is the header)\n\n" +
			"| name | qty |\n| --- | --- |\n| bolt | 3 |\n| nut, hex | 4\\|5 |\n| washer |  |", false},
		{`{"index":5}`, "file 5 (image.png): is a .png file; this tool reads text, Markdown, JSON and CSV", true},
		{`{"index":6}`, "file 6 (big.txt): is 200 bytes, over the 100-byte limit of this tool", true},
		{`{"index":7}`, "file 7 (latin1.txt) is not UTF-8 text", true},
		{`{"index":8}`, "file 8 (missing.txt): cannot be opened: no such file or directory", true},
		{`{"index":9}`, "is not a regular file", true},
		{`{"index":10}`, "File 10: broken.json (JSON; not valid JSON: unexpected end of JSON input)\n\n{\"a\":", false},
		{`{"index":11}`, `"index" is 11, but the files are numbered 1 to 10`, true},
		{`{"index":-1}`, `"index" is -1`, true},
		{`{}`, "The files are:\n1. notes.txt\n2. readme.md", false},
		{`{"path":"/etc/passwd"}`, `unknown field "path"`, true},
	}
	for _, tc := range cases {
		got, err := rd.Call(context.Background(), json.RawMessage(tc.args))
		switch {
		case tc.wantErr && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v; want it to say %q", tc.args, err, tc.want)
		case !tc.wantErr && err != nil:
			t.Errorf("%s: %v", tc.args, err)
		case !tc.wantErr && !strings.HasPrefix(got, tc.want):
			t.Errorf("%s:\n got %q\nwant %q", tc.args, got, tc.want)
		}
	}
}

func TestFileReaderURLs(t *testing.T) {
	mux := http.NewServeMux()
	serve := func(path, ctype, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			_, _ = w.Write([]byte(body))
		})
	}
	serve("/api/items", "application/json; charset=utf-8", `[1,2]`)
	serve("/export", "text/csv", "a,b\n1,2\n")
	serve("/guide.md", "text/plain; charset=utf-8", "# Guide")
	serve("/page", "text/html", "<p>hi</p>")
	serve("/photo", "image/jpeg", "\xff\xd8")
	serve("/large.txt", "text/plain", strings.Repeat("y", 500))
	block := make(chan struct{})
	mux.HandleFunc("/slow.txt", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(block)
	urls := []string{"/api/items", "/export", "/guide.md", "/page", "/photo", "/missing.txt", "/large.txt", "/slow.txt"}
	for i, u := range urls {
		urls[i] = srv.URL + u
	}
	rd, err := tool.FileReader(tool.FileReaderConfig{Files: urls, MaxBytes: 100, Timeout: 200 * time.Millisecond, Client: srv.Client(), AllowPrivateNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		index   int
		want    string
		wantErr bool
	}{
		{1, "(JSON)\n\n[\n  1,\n  2\n]", false},
		{2, "(CSV, 1 row and 2 columns, the first row is the header)\n\n| a | b |\n| --- | --- |\n| 1 | 2 |", false},
		{3, "(Markdown)\n\n# Guide", false},
		{4, "(text)\n\n<p>hi</p>", false},
		{5, `has content type "image/jpeg"`, true},
		{6, "fetching it failed: HTTP 404 Not Found", true},
		{7, "is 500 bytes, over the 100-byte limit", true},
		{8, "fetching it took longer than 200ms", true},
	}
	for _, tc := range cases {
		got, err := rd.Call(context.Background(), mustJSON(t, map[string]int{"index": tc.index}))
		switch {
		case tc.wantErr && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d: err = %v; want it to say %q", tc.index, err, tc.want)
		case !tc.wantErr && (err != nil || !strings.HasSuffix(got, tc.want)):
			t.Errorf("%d: got %q, %v; want it to end %q", tc.index, got, err, tc.want)
		}
	}
}

func TestFileReaderFilesFromState(t *testing.T) {
	dir := t.TempDir()
	filesKey := graph.NewKey[[]string]("files")
	rd, err := tool.FileReader(tool.FileReaderConfig{Name: "open", FilesKey: filesKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Call(context.Background(), json.RawMessage(`{"index":1}`)); err == nil || !strings.Contains(err.Error(), "this call has none") {
		t.Errorf("no state: err = %v", err)
	}
	// Run it in a graph whose input hands over the file.
	p := writeFile(t, dir, "in.txt", "from the run")
	m := &fakeModel{replies: []llm.Message{llm.Assistant("", call("c1", "open", `{"index":1}`), call("c2", "open", `{"index":2}`))}}
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{rd}})
	b := graph.New(msgsKey, recordsKey, filesKey)
	b.AddNode("model", func(ctx context.Context, s graph.State) (graph.Output, error) {
		resp, err := llm.Call(ctx, m, &llm.Request{Messages: msgsKey.Get(s)})
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(msgsKey, resp.Message)), nil
	})
	b.SetEntry("model")
	n.Wire(b, "tools", "model", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), graph.Writes(graph.Append(msgsKey, llm.User("read")), filesKey.Set([]string{p})))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"c1:File 1: in.txt (text)\n\nfrom the run",
		"!c2:Error: invalid arguments for tool \"open\": \"index\" is 2, but the files are numbered 1 to 1 (leave the index out to list them). Fix the arguments and call the tool again.",
	}
	if d := cmp.Diff(want, summarize(msgsKey.Get(res.State))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestFileReaderConfigErrors(t *testing.T) {
	k := graph.NewKey[[]string]("f")
	cases := []struct {
		cfg  tool.FileReaderConfig
		want string
	}{
		{tool.FileReaderConfig{}, "no files"},
		{tool.FileReaderConfig{Files: []string{"a.txt"}, FilesKey: k}, "both Files and FilesKey"},
		{tool.FileReaderConfig{Files: []string{"ftp://host/a.txt"}}, "only http and https"},
		{tool.FileReaderConfig{Files: []string{"a.txt", " "}}, "file 2: the path is empty"},
		{tool.FileReaderConfig{Files: []string{"https:///a.txt"}}, "has no host"},
		{tool.FileReaderConfig{Files: []string{"a.txt"}, MaxBytes: -1}, "MaxBytes is -1"},
		{tool.FileReaderConfig{Files: []string{"a.txt"}, Timeout: -time.Second}, "Timeout is -1s"},
	}
	for _, tc := range cases {
		if _, err := tool.FileReader(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v; want it to say %q", tc.cfg, err, tc.want)
		}
	}
}
