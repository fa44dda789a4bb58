package layering

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/trellis-agents/trellis"

// roots are the top-level directories of Trellis's own packages. Only
// packages under them are checked, so a user's package placed elsewhere in
// the module (a main of their own next to go.mod, say) neither breaks the
// listing nor fails a rule. A new top-level package directory of Trellis
// must be added here, or its packages go unchecked.
var roots = []string{
	"agent", "apps", "bench", "cache", "checkpoint", "cmd", "docs", "eval", "examples",
	"graph", "internal", "llm", "provider", "server", "store", "tool", "workflow",
}

// sdks are the vendor SDK module paths whose compile cost (and API churn)
// the layering keeps out of the core.
var sdks = []string{
	"github.com/openai/openai-go",
	"github.com/anthropics/anthropic-sdk-go",
}

type pkg struct {
	path    string
	name    string   // package clause: "main" for commands
	deps    []string // transitive
	imports []string // direct
	err     string   // why go list could not load it, "" when it could
}

// own reports whether p is one of Trellis's own packages.
func (p pkg) own() bool { return under(p.path, roots...) }

// listAll lists every package of the module with go list -e (which reports
// a package it cannot load instead of failing), passing extra flags first.
// It fails t when one of Trellis's own packages does not load; the others
// are the user's business.
func listAll(t *testing.T, extra ...string) []pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	args := append(append([]string{"list", "-e", "-json=ImportPath,Name,Deps,Imports,Error"}, extra...), module+"/...")
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, msg)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var j struct {
			ImportPath, Name string
			Deps, Imports    []string
			Error            *struct{ Err string }
		}
		if err := dec.Decode(&j); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		p := pkg{path: j.ImportPath, name: j.Name, deps: j.Deps, imports: j.Imports}
		if j.Error != nil {
			p.err = j.Error.Err
			if p.err == "" {
				p.err = "unknown error"
			}
		}
		if p.err != "" && p.own() {
			t.Errorf("go list cannot load %s: %s", p.path, p.err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages; the check would prove nothing", len(pkgs))
	}
	return pkgs
}

func rel(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

func under(path string, roots ...string) bool {
	r := rel(path)
	for _, root := range roots {
		if r == root || strings.HasPrefix(r, root+"/") {
			return true
		}
	}
	return false
}

// coreLinksSDK returns the core packages that link a vendor SDK, and how
// many core packages it checked.
func coreLinksSDK(pkgs []pkg) (violations []string, checked int) {
	for _, p := range pkgs {
		if !under(p.path, "graph", "llm", "tool", "agent", "checkpoint", "store", "cache", "apps", "server", "eval", "workflow", "internal") {
			continue
		}
		checked++
		for _, d := range p.deps {
			for _, sdk := range sdks {
				if strings.HasPrefix(d, sdk) {
					violations = append(violations, rel(p.path)+" links "+d+": vendor SDKs belong in provider/* only")
				}
			}
		}
	}
	return violations, checked
}

// providerImporters returns Trellis's library packages that depend on
// provider. Commands (package main) may: nothing imports a command, so the
// SDKs cannot spread from one into the core.
func providerImporters(pkgs []pkg) []string {
	var violations []string
	for _, p := range pkgs {
		// provider/resolve is the mains' one shared resolver.
		if !p.own() || p.name == "main" || under(p.path, "provider") {
			continue
		}
		for _, d := range p.deps {
			if under(d, "provider") && strings.HasPrefix(d, module) {
				violations = append(violations, rel(p.path)+" depends on "+rel(d)+": only commands (package main) may import provider")
			}
		}
	}
	return violations
}

// internalReachingOut returns the packages under the top-level internal/
// that import a Trellis package outside it. Those packages are the leaves
// every layer shares (the guarded dialer, the SQL glue, test helpers), so
// they sit below everything: one importing, say, apps or graph would sit
// under a package it depends on, and whatever imports it from below
// (graph, checkpoint/sqlite) would be one edit away from a cycle. Code
// that needs the upper layers lives with them: apps/terminal/internal/,
// cmd/trellis's own files.
func internalReachingOut(pkgs []pkg) (violations []string, checked int) {
	for _, p := range pkgs {
		if !under(p.path, "internal") {
			continue
		}
		checked++
		for _, d := range p.imports {
			if strings.HasPrefix(d, module+"/") && !under(d, "internal") {
				violations = append(violations, rel(p.path)+" imports "+rel(d)+": the packages under internal/ import only the standard library, other modules and each other")
			}
		}
	}
	return violations, checked
}

func TestInternalPackagesAreLeaves(t *testing.T) {
	violations, checked := internalReachingOut(listAll(t))
	for _, v := range violations {
		t.Error(v)
	}
	if checked < 5 {
		t.Fatalf("only %d internal packages checked", checked)
	}
}

func TestCoreNeverLinksVendorSDKs(t *testing.T) {
	pkgs := listAll(t)
	sawSDK := false
	for _, p := range pkgs {
		if rel(p.path) == "provider" {
			// The detector must see the SDKs where they are allowed, or
			// the check below proves nothing.
			for _, d := range p.deps {
				sawSDK = sawSDK || strings.HasPrefix(d, sdks[0])
			}
		}
	}
	violations, checked := coreLinksSDK(pkgs)
	for _, v := range violations {
		t.Error(v)
	}
	if checked < 5 {
		t.Fatalf("only %d core packages checked", checked)
	}
	if !sawSDK {
		t.Fatalf("go list shows no %s under provider: the SDK path or the listing is wrong", sdks[0])
	}
}

func TestProviderOnlyImportedByMains(t *testing.T) {
	for _, v := range providerImporters(listAll(t)) {
		t.Error(v)
	}
}

func TestGraphImportsOnlyStdlibCheckpointStore(t *testing.T) {
	for _, p := range listAll(t) {
		if rel(p.path) != "graph" {
			continue
		}
		for _, d := range p.imports {
			std := !strings.Contains(strings.Split(d, "/")[0], ".")
			if !std && !under(d, "checkpoint", "store", "cache") {
				t.Errorf("graph imports %s: graph may import only the standard library, checkpoint, store and cache", d)
			}
		}
		return
	}
	t.Fatal("package graph not found")
}

func TestCacheImportsOnlyStdlib(t *testing.T) {
	for _, p := range listAll(t) {
		if rel(p.path) != "cache" {
			continue
		}
		for _, d := range p.imports {
			if strings.Contains(strings.Split(d, "/")[0], ".") {
				t.Errorf("cache imports %s: the cache interface package may import only the standard library", d)
			}
		}
		return
	}
	t.Fatal("package cache not found")
}

// TestUserPackagesInsideTheModule adds, through a go list overlay (nothing
// is written into the module), what a user may put inside their copy of
// the module: a main of their own that imports provider, and a package
// that does not compile. Neither may fail the rules or the listing. A
// Trellis library package importing provider still must.
func TestUserPackagesInsideTheModule(t *testing.T) {
	rootDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir := strings.TrimSpace(string(rootDir))
	src := t.TempDir()
	files := map[string]string{
		"mybot/main.go": "package main\n\nimport _ \"" + module + "/provider\"\n\nfunc main() {}\n",
		"scratch/x.go":  "package scratch\n\nimport _ \"example.com/not/a/dependency\"\n\nfunc broken( {\n",
		"tool/zzlayeringprobe/probe.go": "// Package zzlayeringprobe exists only in the layering test's overlay.\npackage zzlayeringprobe\n\n" +
			"import _ \"" + module + "/provider\"\n",
		"internal/zzleafprobe/probe.go": "// Package zzleafprobe exists only in the layering test's overlay.\npackage zzleafprobe\n\n" +
			"import _ \"" + module + "/graph\"\n",
	}
	overlay := map[string]map[string]string{"Replace": {}}
	for name, text := range files {
		f := filepath.Join(src, strings.ReplaceAll(name, "/", "_"))
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay["Replace"][filepath.Join(dir, filepath.FromSlash(name))] = f
	}
	data, _ := json.Marshal(overlay)
	overlayFile := filepath.Join(src, "overlay.json")
	if err := os.WriteFile(overlayFile, data, 0o644); err != nil {
		t.Fatal(err)
	}

	pkgs := listAll(t, "-overlay", overlayFile)
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[rel(p.path)] = true
	}
	for _, name := range []string{"mybot", "scratch", "tool/zzlayeringprobe", "internal/zzleafprobe"} {
		if !seen[name] {
			t.Fatalf("the overlay's package %s is not listed: the test proves nothing", name)
		}
	}
	leaves, _ := internalReachingOut(pkgs)
	if len(leaves) != 1 || !strings.HasPrefix(leaves[0], "internal/zzleafprobe imports graph") {
		t.Errorf("internal packages reaching out: %q; want only internal/zzleafprobe importing graph", leaves)
	}
	violations := providerImporters(pkgs)
	if len(violations) == 0 {
		t.Fatal("no violation reported: tool/zzlayeringprobe, a Trellis library package importing provider, should be one")
	}
	for _, v := range violations {
		if !strings.HasPrefix(v, "tool/zzlayeringprobe ") {
			t.Errorf("violation %q; want only the Trellis library package tool/zzlayeringprobe, not the user's packages", v)
		}
	}
}
