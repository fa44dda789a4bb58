package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/trellis-agents/trellis"

// sdks are the vendor SDK module paths whose compile cost (and API churn)
// the layering keeps out of the core.
var sdks = []string{
	"github.com/openai/openai-go",
	"github.com/anthropics/anthropic-sdk-go",
}

type pkg struct {
	path    string
	deps    []string // transitive
	imports []string // direct
}

func listAll(t *testing.T) []pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Deps \" \"}}|{{join .Imports \" \"}}", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, msg)
	}
	var pkgs []pkg
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			t.Fatalf("unexpected go list line %q", line)
		}
		pkgs = append(pkgs, pkg{path: f[0], deps: strings.Fields(f[1]), imports: strings.Fields(f[2])})
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

func TestCoreNeverLinksVendorSDKs(t *testing.T) {
	checked := 0
	sawSDK := false
	for _, p := range listAll(t) {
		if rel(p.path) == "provider" {
			// The detector must see the SDKs where they are allowed, or
			// the check below proves nothing.
			for _, d := range p.deps {
				sawSDK = sawSDK || strings.HasPrefix(d, sdks[0])
			}
		}
		if !under(p.path, "graph", "llm", "tool", "agent", "checkpoint", "store", "apps", "internal/cli", "internal/console") || under(p.path, "internal/cli/resolve") {
			continue
		}
		checked++
		for _, d := range p.deps {
			for _, sdk := range sdks {
				if strings.HasPrefix(d, sdk) {
					t.Errorf("%s links %s: vendor SDKs belong in provider/* only", rel(p.path), d)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d core packages checked", checked)
	}
	if !sawSDK {
		t.Fatalf("go list shows no %s under provider: the SDK path or the listing is wrong", sdks[0])
	}
}

func TestProviderOnlyImportedByMains(t *testing.T) {
	for _, p := range listAll(t) {
		// internal/cli/resolve is the mains' one shared resolver.
		if under(p.path, "provider", "cmd", "examples", "internal/cli/resolve") {
			continue
		}
		for _, d := range p.deps {
			if under(d, "provider") && strings.HasPrefix(d, module) {
				t.Errorf("%s depends on %s: only cmd/ and examples/ mains (and internal/cli/resolve) may import provider", rel(p.path), rel(d))
			}
		}
	}
}

func TestGraphImportsOnlyStdlibCheckpointStore(t *testing.T) {
	for _, p := range listAll(t) {
		if rel(p.path) != "graph" {
			continue
		}
		for _, d := range p.imports {
			std := !strings.Contains(strings.Split(d, "/")[0], ".")
			if !std && !under(d, "checkpoint", "store") {
				t.Errorf("graph imports %s: graph may import only the standard library, checkpoint and store", d)
			}
		}
		return
	}
	t.Fatal("package graph not found")
}
