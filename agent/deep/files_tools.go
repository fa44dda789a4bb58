package deep

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/tool"
)

type lsArgs struct {
	Path string `json:"path,omitempty" jsonschema:"the directory to list, absolute (default /)"`
}

type readArgs struct {
	Path   string `json:"path" jsonschema:"the file's absolute path"`
	Offset int    `json:"offset,omitempty" jsonschema:"the line to start at, counted from 0 (default 0)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many lines to read (default 200, at most 2000)"`
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"the new file's absolute path"`
	Content string `json:"content" jsonschema:"the file's whole content"`
}

type editArgs struct {
	Path       string `json:"path" jsonschema:"the file's absolute path"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace, as read_file shows it without the line numbers"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence; otherwise old_string must occur exactly once"`
}

type grepArgs struct {
	Pattern string `json:"pattern" jsonschema:"the text to look for"`
	Path    string `json:"path,omitempty" jsonschema:"the directory to search, absolute (default /)"`
	Glob    string `json:"glob,omitempty" jsonschema:"only search files whose path matches this glob (such as **/*.md)"`
	Regex   bool   `json:"regex,omitempty" jsonschema:"treat pattern as a regular expression (RE2 syntax) instead of literal text"`
}

type globArgs struct {
	Pattern string `json:"pattern" jsonschema:"the glob: * and ? match within a path element, ** any number of elements (such as /notes/**/*.md); a relative pattern is taken from path"`
	Path    string `json:"path,omitempty" jsonschema:"the directory a relative pattern starts from (default /)"`
}

func (f *Filesystem) newTools() []tool.Tool {
	bad := func(name string) func(error) error {
		return func(err error) error { return tool.BadArguments(name, "%v", err) }
	}
	return []tool.Tool{
		tool.MustFunc(LsTool, "List the files and directories in a directory of your filesystem.",
			func(ctx context.Context, a lsArgs) (string, error) {
				dir, err := dirPath(a.Path)
				if err != nil {
					return "", bad(LsTool)(err)
				}
				return f.ls(ctx, dir)
			}, tool.ReadOnly()),
		tool.MustFunc(ReadFileTool, "Read a file of your filesystem: numbered lines from offset (0 first), at most limit of them (default 200). Read long files a part at a time.",
			func(ctx context.Context, a readArgs) (string, error) {
				p, err := filePath(a.Path)
				if err != nil {
					return "", bad(ReadFileTool)(err)
				}
				if a.Offset < 0 || a.Limit < 0 || a.Limit > maxReadLines {
					return "", tool.BadArguments(ReadFileTool, "offset must not be negative and limit must be between 0 and %d", maxReadLines)
				}
				content, err := f.ReadFile(ctx, p)
				if err != nil {
					return "", err
				}
				return readLines(p, content, a.Offset, a.Limit)
			}, tool.ReadOnly()),
		tool.MustFunc(WriteFileTool, "Create a new file in your filesystem with the content given. It does not replace a file that exists: change one with edit_file.",
			func(ctx context.Context, a writeArgs) (string, error) {
				p, err := filePath(a.Path)
				if err != nil {
					return "", bad(WriteFileTool)(err)
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				old, err := f.ReadFile(ctx, p)
				switch {
				case err == nil && old == a.Content:
					// The same write again (a call re-run after a crash):
					// nothing to do.
					return fmt.Sprintf("Wrote %s (%d lines).", p, lineCount(a.Content)), nil
				case err == nil:
					return "", fmt.Errorf("the file %s exists already; read it and change it with %s, or write to another path", p, EditFileTool)
				case !errors.As(err, new(noFileError)):
					return "", err
				}
				if err := f.WriteFile(ctx, p, a.Content); err != nil {
					return "", err
				}
				return fmt.Sprintf("Wrote %s (%d lines).", p, lineCount(a.Content)), nil
			}, tool.Summary(func(a writeArgs) string {
				return fmt.Sprintf("write the file %s (%d bytes)", a.Path, len(a.Content))
			})),
		tool.MustFunc(EditFileTool, "Replace exact text in a file of your filesystem. old_string must occur exactly once unless replace_all is set; give enough surrounding text to make it unique.",
			func(ctx context.Context, a editArgs) (string, error) {
				p, err := filePath(a.Path)
				if err != nil {
					return "", bad(EditFileTool)(err)
				}
				if a.OldString == "" {
					return "", tool.BadArguments(EditFileTool, "old_string is empty; give the exact text to replace")
				}
				if a.OldString == a.NewString {
					return "", tool.BadArguments(EditFileTool, "old_string and new_string are the same; there is nothing to change")
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				content, err := f.ReadFile(ctx, p)
				if err != nil {
					return "", err
				}
				n := strings.Count(content, a.OldString)
				switch {
				case n == 0:
					return "", fmt.Errorf("old_string does not occur in %s; read the file and copy the text exactly (without the line numbers)", p)
				case n > 1 && !a.ReplaceAll:
					return "", fmt.Errorf("old_string occurs %d times in %s; give more of the surrounding text so it occurs once, or set replace_all", n, p)
				}
				if a.ReplaceAll {
					content = strings.ReplaceAll(content, a.OldString, a.NewString)
				} else {
					content = strings.Replace(content, a.OldString, a.NewString, 1)
				}
				if err := f.WriteFile(ctx, p, content); err != nil {
					return "", err
				}
				return fmt.Sprintf("Replaced %d occurrence(s) in %s.", n, p), nil
			}, tool.Summary(func(a editArgs) string {
				return fmt.Sprintf("edit the file %s", a.Path)
			})),
		tool.MustFunc(GrepTool, "Search the files of your filesystem for text (or a regular expression with regex: true). Returns path:line: text for each matching line, at most 100.",
			func(ctx context.Context, a grepArgs) (string, error) {
				return f.grep(ctx, a)
			}, tool.ReadOnly()),
		tool.MustFunc(GlobTool, "Find files of your filesystem whose path matches a glob such as /notes/**/*.md.",
			func(ctx context.Context, a globArgs) (string, error) {
				return f.glob(ctx, a)
			}, tool.ReadOnly()),
	}
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return len(splitLines(s))
}

// splitLines splits s into lines without their newlines; a final newline
// does not start an empty line.
func splitLines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// readLines formats lines [offset, offset+limit) of content, numbered from
// 1, each cut to maxLineRunes.
func readLines(p, content string, offset, limit int) (string, error) {
	if limit == 0 {
		limit = defaultReadLines
	}
	if content == "" {
		if offset > 0 {
			return "", tool.BadArguments(ReadFileTool, "%s is empty; offset %d is past its end", p, offset)
		}
		return fmt.Sprintf("[%s is empty.]", p), nil
	}
	lines := splitLines(content)
	if offset >= len(lines) {
		return "", tool.BadArguments(ReadFileTool, "%s has %d lines; offset %d is past its end (the last line is offset %d)", p, len(lines), offset, len(lines)-1)
	}
	end := min(len(lines), offset+limit)
	var b strings.Builder
	for i := offset; i < end; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, cutRunes(lines[i], maxLineRunes))
	}
	if end < len(lines) {
		fmt.Fprintf(&b, "[Lines %d-%d of %d; read on with offset %d.]\n", offset+1, end, len(lines), end)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + " …(cut)"
}

func (f *Filesystem) ls(ctx context.Context, dir string) (string, error) {
	var entries []string
	seenDir := map[string]bool{}
	more := false
	truncated, err := f.walk(ctx, dir, func(p string, fl file) (bool, error) {
		rest := strings.TrimPrefix(p, dir+"/")
		entry := ""
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			d := dir + "/" + rest[:i] + "/"
			if seenDir[d] {
				return false, nil
			}
			seenDir[d] = true
			entry = d
		} else {
			entry = fmt.Sprintf("%s (%d bytes)", p, len(fl.Content))
		}
		if len(entries) == maxListed {
			more = true
			return true, nil
		}
		entries = append(entries, entry)
		return false, nil
	})
	if err != nil {
		return "", err
	}
	shown := dir + "/"
	if len(entries) == 0 {
		if dir == "" {
			return "[The filesystem is empty.]", nil
		}
		return fmt.Sprintf("[There are no files in %s.]", shown), nil
	}
	out := strings.Join(entries, "\n")
	if more || truncated {
		out += fmt.Sprintf("\n[The listing of %s is incomplete: it stops after %d entries.]", shown, len(entries))
	}
	return out, nil
}

func (f *Filesystem) grep(ctx context.Context, a grepArgs) (string, error) {
	switch {
	case a.Pattern == "":
		return "", tool.BadArguments(GrepTool, "pattern is empty; give the text to look for")
	case len(a.Pattern) > maxPatternBytes:
		return "", tool.BadArguments(GrepTool, "pattern is longer than %d bytes", maxPatternBytes)
	}
	dir, err := dirPath(a.Path)
	if err != nil {
		return "", tool.BadArguments(GrepTool, "%v", err)
	}
	var filter *globMatcher
	if a.Glob != "" {
		if filter, err = compileGlob(a.Glob, dir); err != nil {
			return "", tool.BadArguments(GrepTool, "glob: %v", err)
		}
	}
	match := func(line string) bool { return strings.Contains(line, a.Pattern) }
	if a.Regex {
		re, err := regexp.Compile(a.Pattern)
		if err != nil {
			return "", tool.BadArguments(GrepTool, "the pattern is not a valid regular expression: %v", err)
		}
		match = re.MatchString
	}
	var hits []string
	more := false
	truncated, err := f.walk(ctx, dir, func(p string, fl file) (bool, error) {
		if filter != nil && !filter.match(p) {
			return false, nil
		}
		for i, line := range splitLines(fl.Content) {
			if !match(line) {
				continue
			}
			if len(hits) == maxGrepMatches {
				more = true
				return true, nil
			}
			hits = append(hits, fmt.Sprintf("%s:%d: %s", p, i+1, cutRunes(line, maxGrepLineRunes)))
		}
		return false, nil
	})
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return fmt.Sprintf("[No line matches %q.]", a.Pattern), nil
	}
	out := strings.Join(hits, "\n")
	switch {
	case more:
		out += fmt.Sprintf("\n[Only the first %d matches are shown; narrow the search with path or glob.]", maxGrepMatches)
	case truncated:
		out += fmt.Sprintf("\n[The search stopped after %d files; narrow it with path or glob.]", f.cfg.MaxFiles)
	}
	return out, nil
}

func (f *Filesystem) glob(ctx context.Context, a globArgs) (string, error) {
	dir, err := dirPath(a.Path)
	if err != nil {
		return "", tool.BadArguments(GlobTool, "%v", err)
	}
	g, err := compileGlob(a.Pattern, dir)
	if err != nil {
		return "", tool.BadArguments(GlobTool, "%v", err)
	}
	var paths []string
	more := false
	truncated, err := f.walk(ctx, g.root(), func(p string, _ file) (bool, error) {
		if !g.match(p) {
			return false, nil
		}
		if len(paths) == maxListed {
			more = true
			return true, nil
		}
		paths = append(paths, p)
		return false, nil
	})
	if err != nil {
		return "", err
	}
	if len(paths) == 0 {
		return fmt.Sprintf("[No file matches %s.]", g.pattern), nil
	}
	out := strings.Join(paths, "\n")
	if more || truncated {
		out += fmt.Sprintf("\n[Only the first %d matching files are listed.]", len(paths))
	}
	return out, nil
}
