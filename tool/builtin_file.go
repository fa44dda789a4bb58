package tool

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/graph"
)

// Defaults of FileReaderConfig.
const (
	DefaultFileMaxBytes     = 1 << 20
	DefaultFileTimeout      = 30 * time.Second
	DefaultFileMaxRedirects = 5
)

// FileReaderConfig configures the file reading tool (FileReader). Set
// exactly one of Files and FilesKey.
type FileReaderConfig struct {
	// Name is the tool's name (default "read_file").
	Name string
	// Files are the files handed to the run: local paths, or http and
	// https URLs. The model picks one by its number (1 for the first); it
	// never names a path, so no other file can be read.
	Files []string
	// FilesKey, instead of Files, reads the list from the state of the
	// running step (see StateFrom), so each run has its own files.
	FilesKey *graph.Key[[]string]
	// MaxBytes bounds the size of a file (default DefaultFileMaxBytes);
	// a larger file is refused, not cut.
	MaxBytes int64
	// Timeout bounds reading a file or fetching a URL, redirects included
	// (default DefaultFileTimeout).
	Timeout time.Duration
	// MaxRedirects bounds the redirects a fetch follows (default
	// DefaultFileMaxRedirects); each must lead to an http or https URL.
	MaxRedirects int
	// AllowPrivateNetworks lets fetches reach loopback, private,
	// link-local and other non-public addresses (a service on the same
	// host or network, a cloud metadata endpoint). Off by default: the
	// address is checked when each connection is made, after name
	// resolution, so neither a redirect nor a DNS answer that changes can
	// reach such a host.
	AllowPrivateNetworks bool
	// Client fetches URLs (default: a client of the tool's own). Its
	// Transport must be an *http.Transport (or nil): the tool uses a copy
	// that dials through its address check and connects directly (no
	// proxy, which would hide the address), and replaces CheckRedirect.
	// With AllowPrivateNetworks, any RoundTripper is used as it is.
	Client *http.Client
}

type fileArgs struct {
	Index int `json:"index,omitempty" jsonschema:"the number of the file to read, 1 for the first; leave it out to list the files"`
}

// FileReader returns a read tool that reads the text, Markdown, JSON and
// CSV files and URLs handed to the run, chosen by number. JSON is
// indented; CSV is rendered as a Markdown table with its first row as the
// header. Calling it without a number lists the files. Other file types,
// files over the size limit, text that is not UTF-8 and failed fetches are
// tool errors the model can read.
func FileReader(cfg FileReaderConfig) (Tool, error) {
	switch {
	case cfg.FilesKey == nil && len(cfg.Files) == 0:
		return nil, errors.New("file reader: no files; set FileReaderConfig.Files, or FilesKey for a list in the run's state")
	case cfg.FilesKey != nil && len(cfg.Files) > 0:
		return nil, errors.New("file reader: both Files and FilesKey are set; use one")
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("file reader: MaxBytes is %d; use a positive limit or 0 for the default", cfg.MaxBytes)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("file reader: Timeout is %v; use a positive duration or 0 for the default", cfg.Timeout)
	case cfg.MaxRedirects < 0:
		return nil, fmt.Errorf("file reader: MaxRedirects is %d; use a positive bound or 0 for the default (%d)", cfg.MaxRedirects, DefaultFileMaxRedirects)
	}
	for i, f := range cfg.Files {
		if err := checkSource(f); err != nil {
			return nil, fmt.Errorf("file reader: file %d: %w", i+1, err)
		}
	}
	name := cfg.Name
	if name == "" {
		name = "read_file"
	}
	r := &fileReader{cfg: cfg, name: name}
	if r.cfg.MaxBytes == 0 {
		r.cfg.MaxBytes = DefaultFileMaxBytes
	}
	if r.cfg.Timeout == 0 {
		r.cfg.Timeout = DefaultFileTimeout
	}
	if r.cfg.MaxRedirects == 0 {
		r.cfg.MaxRedirects = DefaultFileMaxRedirects
	}
	client, err := fetchClient(r.cfg)
	if err != nil {
		return nil, err
	}
	r.cfg.Client = client
	desc := "Read one of the files given for this task (text, Markdown, JSON or CSV), by its number. Call it without a number to list them."
	if len(cfg.Files) > 0 {
		desc += " The files are:\n" + listFiles(cfg.Files)
	}
	return Func(name, desc, r.read, ReadOnly())
}

type fileReader struct {
	cfg  FileReaderConfig
	name string
}

func (r *fileReader) files(ctx context.Context) ([]string, error) {
	if r.cfg.FilesKey == nil {
		return r.cfg.Files, nil
	}
	s, ok := StateFrom(ctx)
	if !ok {
		return nil, errors.New("the file list is kept in the run's state, but this call has none; run the tool from a tool node (or pass the state with tool.WithState)")
	}
	return r.cfg.FilesKey.Get(s), nil
}

func (r *fileReader) read(ctx context.Context, a fileArgs) (string, error) {
	files, err := r.files(ctx)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "No files were given for this task.", nil
	}
	if a.Index == 0 {
		return "The files are:\n" + listFiles(files), nil
	}
	if a.Index < 1 || a.Index > len(files) {
		return "", BadArguments(r.name, `"index" is %d, but the files are numbered 1 to %d (leave the index out to list them)`, a.Index, len(files))
	}
	src := files[a.Index-1]
	if err := checkSource(src); err != nil {
		return "", err
	}
	var (
		data  []byte
		ctype string
	)
	if isURL(src) {
		data, ctype, err = r.fetch(ctx, src)
	} else {
		data, err = r.readLocal(ctx, src)
	}
	if err != nil {
		return "", fmt.Errorf("file %d (%s): %w", a.Index, displayName(src), err)
	}
	kind, err := fileKind(src, ctype)
	if err != nil {
		return "", fmt.Errorf("file %d (%s): %w", a.Index, displayName(src), err)
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("file %d (%s) is not UTF-8 text", a.Index, displayName(src))
	}
	body, note := render(kind, data)
	return fmt.Sprintf("File %d: %s (%s%s)\n\n%s", a.Index, displayName(src), kind, note, body), nil
}

// readLocal reads a regular file. It looks before it opens, so that a
// named pipe or a device (which could block forever or never end) is
// refused without being opened, and opens without blocking in case the
// path was swapped meanwhile, checking again what it opened.
func (r *fileReader) readLocal(parent context.Context, p string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, r.cfg.Timeout)
	defer cancel()
	st, err := os.Stat(p)
	if err != nil {
		return nil, errors.New("cannot be opened: " + pathProblem(err))
	}
	if err := regular(st); err != nil {
		return nil, err
	}
	if st.Size() > r.cfg.MaxBytes {
		return nil, fmt.Errorf("is %d bytes, over the %d-byte limit of this tool", st.Size(), r.cfg.MaxBytes)
	}
	f, err := openNoBlock(p)
	if err != nil {
		return nil, errors.New("cannot be opened: " + pathProblem(err))
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := regular(opened); err != nil {
		return nil, err
	}
	if !os.SameFile(st, opened) {
		return nil, errors.New("changed while it was being opened; try again")
	}
	data, err := r.limited(ctxReader{ctx: ctx, r: f})
	if err != nil && ctx.Err() != nil {
		if parent.Err() != nil {
			return nil, context.Cause(parent)
		}
		return nil, fmt.Errorf("reading it took longer than %v", r.cfg.Timeout)
	}
	return data, err
}

// regular refuses anything but a regular file, saying what it is.
func regular(st os.FileInfo) error {
	m := st.Mode()
	what := ""
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&os.ModeSocket != 0:
		what = "a socket"
	case m&os.ModeDevice != 0:
		what = "a device"
	default:
		what = "a special file"
	}
	return fmt.Errorf("is not a regular file (it is %s); this tool reads only regular files", what)
}

func pathProblem(err error) string {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// ctxReader reads from r until ctx is done; each read is at most 64 KiB,
// so a long read notices cancellation soon.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > 64<<10 {
		p = p[:64<<10]
	}
	return c.r.Read(p)
}

func (r *fileReader) fetch(ctx context.Context, u string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		if refused, ok := errors.AsType[*refusedError](err); ok {
			return nil, "", refused
		}
		if refused, ok := refusal(err); ok {
			return nil, "", refused
		}
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, "", fmt.Errorf("fetching it took longer than %v", r.cfg.Timeout)
		}
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, "", fmt.Errorf("fetching it failed: HTTP %s", resp.Status)
	}
	if resp.ContentLength > r.cfg.MaxBytes {
		return nil, "", fmt.Errorf("is %d bytes, over the %d-byte limit of this tool", resp.ContentLength, r.cfg.MaxBytes)
	}
	data, err := r.limited(resp.Body)
	return data, resp.Header.Get("Content-Type"), err
}

func (r *fileReader) limited(rd io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(rd, r.cfg.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > r.cfg.MaxBytes {
		return nil, fmt.Errorf("is over the %d-byte limit of this tool", r.cfg.MaxBytes)
	}
	return data, nil
}

func isURL(s string) bool { return strings.Contains(s, "://") }

// checkSource accepts local paths and http(s) URLs.
func checkSource(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("the path is empty")
	}
	if !isURL(s) {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a valid URL: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: only http and https URLs can be read", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}

// displayName shows a local file by its base name (the model needs no
// directory) and a URL in full.
func displayName(s string) string {
	if isURL(s) {
		return s
	}
	return filepath.Base(s)
}

func listFiles(files []string) string {
	var b strings.Builder
	for i, f := range files {
		fmt.Fprintf(&b, "%d. %s\n", i+1, displayName(f))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// File kinds the reader renders.
const (
	kindText     = "text"
	kindMarkdown = "Markdown"
	kindJSON     = "JSON"
	kindCSV      = "CSV"
)

// fileKind decides how to render a file: by a URL's content type when it
// names one of the kinds, else by the extension, else as text when the
// content type is text/* (or there is neither a content type nor an
// extension).
func fileKind(src, ctype string) (string, error) {
	mt := ""
	if ctype != "" {
		if m, _, err := mime.ParseMediaType(ctype); err == nil {
			mt = m
		}
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return kindJSON, nil
	case mt == "text/csv":
		return kindCSV, nil
	case mt == "text/markdown" || mt == "text/x-markdown":
		return kindMarkdown, nil
	}
	ext := strings.ToLower(extOf(src))
	switch ext {
	case ".txt", ".text", ".log":
		return kindText, nil
	case ".md", ".markdown":
		return kindMarkdown, nil
	case ".json":
		return kindJSON, nil
	case ".csv":
		return kindCSV, nil
	}
	switch {
	case strings.HasPrefix(mt, "text/"), mt == "" && ext == "":
		return kindText, nil
	case mt != "":
		return "", fmt.Errorf("has content type %q; this tool reads text, Markdown, JSON and CSV", mt)
	}
	return "", fmt.Errorf("is a %s file; this tool reads text, Markdown, JSON and CSV", ext)
}

func extOf(src string) string {
	if isURL(src) {
		if u, err := url.Parse(src); err == nil {
			return path.Ext(u.Path)
		}
	}
	return filepath.Ext(src)
}

// render formats a file's content for the model and returns a note for its
// heading.
func render(kind string, data []byte) (string, string) {
	switch kind {
	case kindJSON:
		var b bytes.Buffer
		if err := json.Indent(&b, data, "", "  "); err != nil {
			return string(data), "; not valid JSON: " + err.Error()
		}
		return b.String(), ""
	case kindCSV:
		return renderCSV(data)
	}
	return string(data), ""
}

// renderCSV renders CSV as a Markdown table, the first row as its header.
func renderCSV(data []byte) (string, string) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	rows, err := r.ReadAll()
	if err != nil {
		return string(data), "; could not be parsed as CSV: " + err.Error()
	}
	if len(rows) == 0 {
		return "(empty)", ", no rows"
	}
	cols := 0
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	var b strings.Builder
	line := func(row []string) {
		b.WriteByte('|')
		for i := range cols {
			cell := ""
			if i < len(row) {
				cell = row[i]
			}
			cell = strings.ReplaceAll(cell, "|", `\|`)
			cell = strings.Join(strings.Fields(cell), " ")
			b.WriteString(" " + cell + " |")
		}
		b.WriteByte('\n')
	}
	line(rows[0])
	b.WriteString(strings.Repeat("| --- ", cols) + "|\n")
	for _, row := range rows[1:] {
		line(row)
	}
	return strings.TrimSuffix(b.String(), "\n"), fmt.Sprintf(", %s and %s, the first row is the header", plural(len(rows)-1, "row"), plural(cols, "column"))
}
