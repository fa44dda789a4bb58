package guide_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPagesQuoteTheirExamples keeps the pages and the examples together:
// every example is named on a page, the page shows its checked output
// verbatim (so a page never shows output the code no longer prints), and
// every page points at at least one example.
func TestPagesQuoteTheirExamples(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil || len(pages) < 8 {
		t.Fatalf("found pages %v (%v); want the guide's eight pages and its index", pages, err)
	}
	text := map[string]string{}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text[p] = string(b)
	}

	fset := token.NewFileSet()
	tests, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, f := range tests {
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, af)
	}
	examples := doc.Examples(files...)
	if len(examples) < 10 {
		t.Fatalf("found %d examples; the parse is wrong", len(examples))
	}
	pointed := map[string]bool{}
	for _, ex := range examples {
		name := "Example" + ex.Name
		if ex.Suffix != "" {
			name += "_" + ex.Suffix
		}
		if ex.Output == "" {
			t.Errorf("%s has no // Output: comment, so go test does not check what it prints", name)
		}
		var on []string
		for p, body := range text {
			if p != "README.md" && strings.Contains(body, name) {
				on = append(on, p)
				pointed[p] = true
			}
		}
		if len(on) == 0 {
			t.Errorf("no page names %s", name)
			continue
		}
		for _, p := range on {
			if !strings.Contains(text[p], strings.TrimSpace(ex.Output)) {
				t.Errorf("%s names %s but does not show its output:\n%s", p, name, ex.Output)
			}
		}
	}
	for _, p := range pages {
		if p != "README.md" && !pointed[p] {
			t.Errorf("%s names no example", p)
		}
		if p != "README.md" && !strings.Contains(text["README.md"], "("+p+")") {
			t.Errorf("the index README.md does not link %s", p)
		}
	}
}

// TestProvidersPageShowsItsProgram checks that the providers page shows
// localmodel/main.go exactly. The program imports provider, so the guide's
// tests do not build it (the vendor SDKs take long to compile); `go vet
// ./...` does.
func TestProvidersPageShowsItsProgram(t *testing.T) {
	page, err := os.ReadFile("08-providers.md")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile(filepath.Join("localmodel", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```go\n"+string(prog)+"```\n") {
		t.Fatal("08-providers.md does not show localmodel/main.go as it is: copy the file into the page's go block")
	}
}
