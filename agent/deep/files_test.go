package deep_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

type args = map[string]any

func newFS(t *testing.T, cfg deep.FilesConfig) map[string]tool.Tool {
	t.Helper()
	fs, err := deep.Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return toolsByName(fs.Tools())
}

// mustOf returns a function that fails t on an error and returns the
// output otherwise.
func mustOf(t *testing.T) func(string, error) string {
	return func(out string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return out
	}
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

func TestFilesWriteReadEdit(t *testing.T) {
	must := mustOf(t)
	fs := newFS(t, deep.FilesConfig{})
	inRun(t, store.NewMemory(), "t1", func(ctx context.Context) {
		must(call(ctx, fs[deep.WriteFileTool], args{"path": "/notes/a.md", "content": "one\ntwo\ntwo\nfour\n"}))
		_, err := call(ctx, fs[deep.WriteFileTool], args{"path": "/notes/a.md", "content": "again"})
		wantErr(t, err, "exists already")

		got := must(call(ctx, fs[deep.ReadFileTool], args{"path": "/notes/a.md", "offset": 1, "limit": 2}))
		want := "     2\ttwo\n     3\ttwo\n[Lines 2-3 of 4; read on with offset 3.]"
		if got != want {
			t.Errorf("read:\n%q\nwant\n%q", got, want)
		}
		_, err = call(ctx, fs[deep.ReadFileTool], args{"path": "/notes/a.md", "offset": 4})
		wantErr(t, err, "has 4 lines; offset 4 is past its end")
		_, err = call(ctx, fs[deep.ReadFileTool], args{"path": "/notes/none.md"})
		wantErr(t, err, "there is no file /notes/none.md")

		_, err = call(ctx, fs[deep.EditFileTool], args{"path": "/notes/a.md", "old_string": "two", "new_string": "2"})
		wantErr(t, err, "occurs 2 times")
		_, err = call(ctx, fs[deep.EditFileTool], args{"path": "/notes/a.md", "old_string": "five", "new_string": "5"})
		wantErr(t, err, "does not occur")
		_, err = call(ctx, fs[deep.EditFileTool], args{"path": "/notes/a.md", "old_string": "one", "new_string": "one"})
		wantErr(t, err, "the same")
		must(call(ctx, fs[deep.EditFileTool], args{"path": "/notes/a.md", "old_string": "one", "new_string": "1"}))
		got = must(call(ctx, fs[deep.EditFileTool], args{"path": "/notes/a.md", "old_string": "two", "new_string": "2", "replace_all": true}))
		if got != "Replaced 2 occurrence(s) in /notes/a.md." {
			t.Errorf("edit: %q", got)
		}
		got = must(call(ctx, fs[deep.ReadFileTool], args{"path": "/notes/a.md"}))
		if got != "     1\t1\n     2\t2\n     3\t2\n     4\tfour" {
			t.Errorf("after edits: %q", got)
		}
	})
}

func TestFilesRefuseBadPaths(t *testing.T) {
	must := mustOf(t)
	fs := newFS(t, deep.FilesConfig{})
	bad := map[string]string{
		"":                             "empty",
		"notes/a.md":                   "relative",
		"/notes/../../etc/pwd":         "..",
		"/notes/./a.md":                `"."`,
		"//a.md":                       "not clean",
		"/a//b.md":                     "not clean",
		`/a\b.md`:                      "backslash",
		"/a\x00b":                      "control character",
		"/":                            "root directory",
		"/" + strings.Repeat("a", 600): "bytes long",
	}
	inRun(t, store.NewMemory(), "t1", func(ctx context.Context) {
		for p, want := range bad {
			_, err := call(ctx, fs[deep.WriteFileTool], args{"path": p, "content": "x"})
			if !tool.IsArgumentError(err) {
				t.Errorf("write %q: %v, want an argument error", p, err)
			}
			wantErr(t, err, want)
			_, err = call(ctx, fs[deep.ReadFileTool], args{"path": p})
			if err == nil {
				t.Errorf("read %q: no error", p)
			}
		}
		out := must(call(ctx, fs[deep.LsTool], args{}))
		if out != "[The filesystem is empty.]" {
			t.Errorf("a bad path wrote something: %q", out)
		}
	})
}

func TestFilesScope(t *testing.T) {
	must := mustOf(t)
	st := store.NewMemory()
	perThread := newFS(t, deep.FilesConfig{})
	shared := newFS(t, deep.FilesConfig{Shared: true})
	inRun(t, st, "t1", func(ctx context.Context) {
		must(call(ctx, perThread[deep.WriteFileTool], args{"path": "/mine.md", "content": "t1"}))
		must(call(ctx, shared[deep.WriteFileTool], args{"path": "/ours.md", "content": "all"}))
	})
	inRun(t, st, "t2", func(ctx context.Context) {
		_, err := call(ctx, perThread[deep.ReadFileTool], args{"path": "/mine.md"})
		wantErr(t, err, "there is no file")
		got := must(call(ctx, shared[deep.ReadFileTool], args{"path": "/ours.md"}))
		if !strings.HasSuffix(got, "all") {
			t.Errorf("shared file: %q", got)
		}
		if ls := must(call(ctx, shared[deep.LsTool], args{})); ls != "/ours.md (3 bytes)" {
			t.Errorf("shared ls shows another scope's files: %q", ls)
		}
	})
	inRun(t, st, "", func(ctx context.Context) {
		_, err := call(ctx, perThread[deep.LsTool], args{})
		wantErr(t, err, "has no thread")
	})
}

func TestFilesListGrepGlobAreBounded(t *testing.T) {
	must := mustOf(t)
	fs := newFS(t, deep.FilesConfig{MaxFiles: 700})
	inRun(t, store.NewMemory(), "t1", func(ctx context.Context) {
		for i := range 600 {
			must(call(ctx, fs[deep.WriteFileTool], args{"path": fmt.Sprintf("/data/f%03d.txt", i), "content": "needle\nhay\nneedle " + strings.Repeat("x", 500)}))
		}
		must(call(ctx, fs[deep.WriteFileTool], args{"path": "/docs/guide/intro.md", "content": "# Intro\nneedle here"}))
		must(call(ctx, fs[deep.WriteFileTool], args{"path": "/top.md", "content": "top"}))

		ls := must(call(ctx, fs[deep.LsTool], args{"path": "/"}))
		if ls != "/data/\n/docs/\n/top.md (3 bytes)" {
			t.Errorf("ls /: %q", ls)
		}
		ls = must(call(ctx, fs[deep.LsTool], args{"path": "/data"}))
		if n := strings.Count(ls, "\n"); n != 500 || !strings.Contains(ls, "incomplete") {
			t.Errorf("ls /data has %d lines; want 500 entries and a note", n)
		}

		g := must(call(ctx, fs[deep.GrepTool], args{"pattern": "needle"}))
		lines := strings.Split(g, "\n")
		if len(lines) != 101 || !strings.Contains(lines[100], "Only the first 100") {
			t.Errorf("grep gave %d lines, last %q", len(lines), lines[len(lines)-1])
		}
		if !strings.HasPrefix(lines[0], "/data/f000.txt:1: needle") || len([]rune(lines[1])) > 260 {
			t.Errorf("grep lines: %q / %q", lines[0], lines[1])
		}
		g = must(call(ctx, fs[deep.GrepTool], args{"pattern": "^needle h", "regex": true, "glob": "**/*.md"}))
		if g != "/docs/guide/intro.md:2: needle here" {
			t.Errorf("regex grep: %q", g)
		}
		_, err := call(ctx, fs[deep.GrepTool], args{"pattern": "(", "regex": true})
		wantErr(t, err, "not a valid regular expression")

		got := must(call(ctx, fs[deep.GlobTool], args{"pattern": "/**/*.md"}))
		if got != "/docs/guide/intro.md\n/top.md" {
			t.Errorf("glob /**/*.md: %q", got)
		}
		got = must(call(ctx, fs[deep.GlobTool], args{"pattern": "guide/*.md", "path": "/docs"}))
		if got != "/docs/guide/intro.md" {
			t.Errorf("relative glob: %q", got)
		}
		got = must(call(ctx, fs[deep.GlobTool], args{"pattern": "/data/f1?9.txt"}))
		if strings.Count(got, "\n") != 9 {
			t.Errorf("glob ?: %q", got)
		}
		_, err = call(ctx, fs[deep.GlobTool], args{"pattern": "/a/[/b"})
		wantErr(t, err, "malformed")
	})
}

func TestFilesSizeLimit(t *testing.T) {
	must := mustOf(t)
	fs := newFS(t, deep.FilesConfig{MaxFileBytes: 10})
	inRun(t, store.NewMemory(), "t1", func(ctx context.Context) {
		_, err := call(ctx, fs[deep.WriteFileTool], args{"path": "/big", "content": strings.Repeat("x", 11)})
		wantErr(t, err, "at most 10")
		must(call(ctx, fs[deep.WriteFileTool], args{"path": "/small", "content": "x"}))
		_, err = call(ctx, fs[deep.EditFileTool], args{"path": "/small", "old_string": "x", "new_string": strings.Repeat("y", 11)})
		wantErr(t, err, "at most 10")
	})
}

// Writing a file again with the content it holds (a call re-run after a
// crash) succeeds without a change; other content is refused.
func TestWriteFileIsIdempotent(t *testing.T) {
	must := mustOf(t)
	fs := newFS(t, deep.FilesConfig{})
	inRun(t, store.NewMemory(), "t1", func(ctx context.Context) {
		first := must(call(ctx, fs[deep.WriteFileTool], args{"path": "/a", "content": "x\ny\n"}))
		again := must(call(ctx, fs[deep.WriteFileTool], args{"path": "/a", "content": "x\ny\n"}))
		if first != again || first != "Wrote /a (2 lines)." {
			t.Errorf("%q then %q", first, again)
		}
		_, err := call(ctx, fs[deep.WriteFileTool], args{"path": "/a", "content": "z"})
		wantErr(t, err, "exists already")
	})
}
