package deep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// The names of the virtual filesystem's tools.
const (
	LsTool        = "ls"
	ReadFileTool  = "read_file"
	WriteFileTool = "write_file"
	EditFileTool  = "edit_file"
	GrepTool      = "grep"
	GlobTool      = "glob"
)

// FilesConfig configures the virtual filesystem. Every field has the
// default its comment names.
type FilesConfig struct {
	// Namespace is the store namespace the files live under (default
	// ["deep_files"]). Each file is one item, keyed by its path.
	Namespace []string
	// Shared puts every thread's files in one place (Namespace +
	// "shared"); by default each thread has its own (Namespace +
	// "threads" + the thread ID), and a run without a thread is refused.
	Shared bool
	// MaxFileBytes bounds one file (default 1 MiB).
	MaxFileBytes int
	// MaxFiles bounds how many files a listing, glob or grep looks at
	// (default 1000); past it the tool says the result is incomplete.
	MaxFiles int
}

// Filesystem is a virtual filesystem over the run's store
// (graph.WithStore): paths are absolute, slash-separated and clean
// ("/notes/plan.md"); directories exist only as the prefixes of files. As
// a middleware it gives the agent the tools ls, read_file, write_file,
// edit_file, grep and glob; its ReadFile and WriteFile are for code (the
// summariser writes evicted history through them).
type Filesystem struct {
	cfg   FilesConfig
	tools []tool.Tool
	mu    sync.Mutex // serialises read-modify-write of this process's edits
}

// file is what the store holds for a file.
type file struct {
	Content  string    `json:"content"`
	Modified time.Time `json:"modified"`
}

// Bounds of the tools' outputs.
const (
	maxPathBytes     = 512
	defaultReadLines = 200
	maxReadLines     = 2000
	maxLineRunes     = 2000
	maxGrepMatches   = 100
	maxGrepLineRunes = 200
	maxListed        = 500
	maxPatternBytes  = 1000
	scanPage         = 50
)

// Files returns the virtual filesystem configured by cfg.
func Files(cfg FilesConfig) (*Filesystem, error) {
	if cfg.Namespace == nil {
		cfg.Namespace = []string{"deep_files"}
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = 1 << 20
	}
	if cfg.MaxFiles == 0 {
		cfg.MaxFiles = 1000
	}
	var errs []error
	if err := store.ValidateNamespace(cfg.Namespace); err != nil {
		errs = append(errs, fmt.Errorf("deep: FilesConfig.Namespace: %w", err))
	}
	if cfg.MaxFileBytes < 0 || cfg.MaxFiles < 0 {
		errs = append(errs, fmt.Errorf("deep: FilesConfig.MaxFileBytes (%d) and MaxFiles (%d) must not be negative", cfg.MaxFileBytes, cfg.MaxFiles))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg.Namespace = slices.Clone(cfg.Namespace)
	f := &Filesystem{cfg: cfg}
	f.tools = f.newTools()
	return f, nil
}

// Name names the middleware.
func (f *Filesystem) Name() string { return "filesystem" }

// Tools returns ls, read_file, write_file, edit_file, grep and glob.
func (f *Filesystem) Tools() []tool.Tool { return slices.Clone(f.tools) }

// namespace returns where the run's files are, or an error when the run
// lacks a store or (per-thread scope) a thread.
func (f *Filesystem) namespace(ctx context.Context) (store.Store, []string, error) {
	st := graph.StoreFrom(ctx)
	if st == nil {
		return nil, nil, errors.New("the run has no store, so there is no filesystem; give the run one with graph.WithStore")
	}
	ns := slices.Clone(f.cfg.Namespace)
	if f.cfg.Shared {
		return st, append(ns, "shared"), nil
	}
	th := graph.ThreadID(ctx)
	if th == "" {
		return nil, nil, errors.New("the files are kept per thread, but the run has no thread; run it with graph.WithThread, or configure shared files")
	}
	return st, append(ns, "threads", th), nil
}

// CleanPath checks a path the model gave and returns it: absolute,
// slash-separated, without "." or ".." elements, doubled or trailing
// slashes, backslashes or control characters, at most 512 bytes. A bad
// path is an error saying why, never a path outside the filesystem.
func CleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("the path is empty; give an absolute path such as /notes/plan.md")
	case len(p) > maxPathBytes:
		return "", fmt.Errorf("the path is %d bytes long; paths are at most %d", len(p), maxPathBytes)
	case !strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("the path %q is relative; paths start with / (such as /%s)", p, strings.TrimLeft(p, "./"))
	case strings.ContainsRune(p, '\\'):
		return "", fmt.Errorf("the path %q holds a backslash; separate directories with /", p)
	case strings.ContainsFunc(p, unicode.IsControl):
		return "", fmt.Errorf("the path %q holds a control character", p)
	}
	for _, e := range strings.Split(p[1:], "/") {
		if e == ".." || e == "." {
			return "", fmt.Errorf("the path %q holds %q; give the path without . or .. elements", p, e)
		}
	}
	if c := path.Clean(p); c != p && c+"/" != p {
		return "", fmt.Errorf("the path %q is not clean; did you mean %q?", p, c)
	}
	return strings.TrimSuffix(p, "/"), nil
}

// filePath is CleanPath for a file: the root is not a file.
func filePath(p string) (string, error) {
	c, err := CleanPath(p)
	if err == nil && c == "" {
		err = errors.New("/ is the root directory, not a file; give a file's path")
	}
	return c, err
}

// dirPath is CleanPath for a directory, "" (the root) by default.
func dirPath(p string) (string, error) {
	if p == "" || p == "/" {
		return "", nil
	}
	return CleanPath(p)
}

// ReadFile returns the content of the file at p.
func (f *Filesystem) ReadFile(ctx context.Context, p string) (string, error) {
	p, err := filePath(p)
	if err != nil {
		return "", err
	}
	st, ns, err := f.namespace(ctx)
	if err != nil {
		return "", err
	}
	v, err := store.Get[file](ctx, st, ns, p)
	if errors.Is(err, store.ErrNotFound) {
		return "", noFileError(p)
	}
	if err != nil {
		return "", err
	}
	return v.Content, nil
}

// WriteFile creates or replaces the file at p with content.
func (f *Filesystem) WriteFile(ctx context.Context, p, content string) error {
	p, err := filePath(p)
	if err != nil {
		return err
	}
	if len(content) > f.cfg.MaxFileBytes {
		return fmt.Errorf("the content is %d bytes; a file holds at most %d", len(content), f.cfg.MaxFileBytes)
	}
	st, ns, err := f.namespace(ctx)
	if err != nil {
		return err
	}
	return store.Put(ctx, st, ns, p, file{Content: content, Modified: time.Now().UTC()}, store.PutOptions{NoIndex: true})
}

// noFileError is ReadFile's error for a path without a file.
type noFileError string

func (e noFileError) Error() string {
	return fmt.Sprintf("there is no file %s; list the files with %s or %s", string(e), LsTool, GlobTool)
}

// walk calls fn for each file under dir ("" for all), in path order, a
// page of files at a time so memory stays bounded, until fn stops it; it
// reports whether it stopped at MaxFiles.
func (f *Filesystem) walk(ctx context.Context, dir string, fn func(p string, fl file) (stop bool, err error)) (truncated bool, err error) {
	st, ns, err := f.namespace(ctx)
	if err != nil {
		return false, err
	}
	seen := 0
	for offset := 0; ; offset += scanPage {
		items, err := st.Search(ctx, ns, store.Query{Limit: scanPage, Offset: offset})
		if err != nil {
			return false, err
		}
		for _, it := range items {
			if !slices.Equal(it.Namespace, ns) || !under(it.Key, dir) {
				continue
			}
			if seen == f.cfg.MaxFiles {
				return true, nil
			}
			seen++
			var fl file
			if err := json.Unmarshal(it.Value, &fl); err != nil {
				return false, fmt.Errorf("the file %s is not readable: %w", it.Key, err)
			}
			stop, err := fn(it.Key, fl)
			if err != nil || stop {
				return false, err
			}
		}
		if len(items) < scanPage {
			return false, nil
		}
	}
}

// under reports whether the file p is inside dir ("" is the root).
func under(p, dir string) bool { return dir == "" || strings.HasPrefix(p, dir+"/") }

// WrapModel tells the model, in a system note, where its files are kept.
func (f *Filesystem) WrapModel(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	scope := "They are this conversation's own."
	if f.cfg.Shared {
		scope = "They are shared with your other conversations."
	}
	call.Request = withSystemNote(call.Request, "Your filesystem starts at /; "+scope+" Read a file before you edit it.")
	return next(ctx, call)
}
