package deep_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/store"
)

// BenchmarkFiles measures the filesystem tools on the in-memory store:
// reading a page of a 10,000-line file, and grep and glob over 1,000
// files of 100 lines.
func BenchmarkFiles(b *testing.B) {
	fs, err := deep.Files(deep.FilesConfig{})
	if err != nil {
		b.Fatal(err)
	}
	tools := toolsByName(fs.Tools())
	st := store.NewMemory()
	line := strings.Repeat("word ", 12) + "\n"
	inRun(b, st, "bench", func(ctx context.Context) {
		if _, err := call(ctx, tools[deep.WriteFileTool], args{"path": "/big.txt", "content": strings.Repeat(line, 10000)}); err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			if _, err := call(ctx, tools[deep.WriteFileTool], args{"path": fmt.Sprintf("/d%d/f%03d.md", i%10, i), "content": strings.Repeat(line, 99) + "needle\n"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name string
		tool string
		args args
	}{
		{"read_file_200_lines_of_10000", deep.ReadFileTool, args{"path": "/big.txt", "offset": 5000}},
		{"grep_1000_files", deep.GrepTool, args{"pattern": "needle", "glob": "/d3/*.md"}},
		{"glob_1000_files", deep.GlobTool, args{"pattern": "/**/f1?9.md"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			inRun(b, st, "bench", func(ctx context.Context) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := call(ctx, tools[c.tool], c.args); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
