package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// refNote is added to every tool's description, so the model learns the
// reference syntax where it uses it.
const refNote = "Any text argument may contain {{call:ID}}, where ID is the ID of an earlier tool call: " +
	"it is replaced with that call's full output before this tool runs (use it rather than copying an output)."

// refPattern matches a reference. An ID never holds braces, spaces,
// quotes or backslashes, so a match inside a JSON string literal never
// reaches past it.
var refPattern = regexp.MustCompile(`\{\{\s*call:\s*([^{}\s"\\]+)\s*\}\}`)

// MaxExpansion bounds the size of a call's arguments after its references
// are replaced (outputs that contain references are expanded too, so a
// few references could otherwise grow without bound).
const MaxExpansion = 4 << 20

// Ref returns the reference to the output of the call with this ID, as a
// model writes it in a text argument: "{{call:ID}}".
func Ref(callID string) string { return "{{call:" + callID + "}}" }

// References returns the IDs of the calls text refers to, in order of
// first appearance, each once. Applied to a record's Arguments, it gives
// the calls whose outputs the call received.
func References(text string) []string {
	var ids []string
	for _, m := range refPattern.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// resolve returns call's arguments with every reference replaced by the
// output it names, or an error for the model saying which reference is
// wrong and why. Arguments that are not valid JSON are returned as they
// are, for the tool node to report.
func (r *router) resolve(s graph.State, call llm.ToolCall) (string, error) {
	args := call.Arguments
	if !strings.Contains(args, "{{") || !refPattern.MatchString(args) || !json.Valid([]byte(args)) {
		return args, nil
	}
	res := &resolver{
		records: r.calls.Get(s),
		self:    call.ID,
		sibling: siblings(r.msgs.Get(s), call.ID),
		memo:    map[string]string{},
	}
	var err error
	out := refPattern.ReplaceAllStringFunc(args, func(m string) string {
		if err != nil {
			return m
		}
		var text string
		text, err = res.output(refPattern.FindStringSubmatch(m)[1], []string{call.ID})
		return jsonText(text)
	})
	if err != nil {
		return "", err
	}
	if len(out) > MaxExpansion {
		return "", fmt.Errorf("the references make the arguments %d bytes long, more than the %d allowed", len(out), MaxExpansion)
	}
	return out, nil
}

type resolver struct {
	records map[string]tool.Record
	self    string
	sibling map[string]bool // the other calls of the same reply
	memo    map[string]string
}

// output returns the output of call id with its own references expanded.
// chain lists the calls being expanded, starting with the call being
// resolved.
func (res *resolver) output(id string, chain []string) (string, error) {
	ref := Ref(id)
	switch {
	case id == res.self && len(chain) == 1:
		return "", fmt.Errorf("%s refers to this call itself; a call can use only the outputs of earlier calls", ref)
	case slices.Contains(chain, id):
		return "", fmt.Errorf("the references form a cycle (%s → %s): the output of %s refers back to a call that refers to it",
			strings.Join(chain, " → "), id, chain[len(chain)-1])
	}
	if text, ok := res.memo[id]; ok {
		return text, nil
	}
	rec, ok := res.records[id]
	switch {
	case !ok && res.sibling[id]:
		return "", fmt.Errorf("%s refers to a call of the same reply, which has not finished yet; make this call again in your next reply, once that result is in", ref)
	case !ok:
		return "", fmt.Errorf("%s refers to no earlier call: no call has the ID %q%s", ref, id, res.known())
	case rec.Error != "":
		return "", fmt.Errorf("%s refers to a call of %s that failed (%s), so it has no output to use", ref, rec.Tool, clip(rec.Error, 200))
	}
	text := rec.Result
	if strings.Contains(text, "{{") {
		var err error
		chain := append(chain[:len(chain):len(chain)], id)
		text = refPattern.ReplaceAllStringFunc(text, func(m string) string {
			if err != nil {
				return m
			}
			var t string
			t, err = res.output(refPattern.FindStringSubmatch(m)[1], chain)
			return t
		})
		if err != nil {
			return "", err
		}
		if len(text) > MaxExpansion {
			return "", fmt.Errorf("the output of %s expands to more than %d bytes", id, MaxExpansion)
		}
	}
	res.memo[id] = text
	return text, nil
}

// known lists the IDs of recorded calls that succeeded (the latest 10),
// for the model to pick from.
func (res *resolver) known() string {
	ids := slices.Sorted(maps.Keys(res.records))
	slices.SortStableFunc(ids, func(a, b string) int { return res.records[a].Step - res.records[b].Step })
	var ok []string
	for _, id := range ids {
		if rec := res.records[id]; rec.Error == "" {
			ok = append(ok, fmt.Sprintf("%s (%s)", id, rec.Tool))
		}
	}
	if len(ok) == 0 {
		return "; no call has an output yet"
	}
	if len(ok) > 10 {
		ok = ok[len(ok)-10:]
	}
	return "; calls with outputs: " + strings.Join(ok, ", ")
}

// siblings returns the IDs of the other calls of the reply that made the
// call id.
func siblings(msgs []llm.Message, id string) map[string]bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleAssistant || !slices.ContainsFunc(m.ToolCalls, func(c llm.ToolCall) bool { return c.ID == id }) {
			continue
		}
		out := make(map[string]bool, len(m.ToolCalls))
		for _, c := range m.ToolCalls {
			if c.ID != id {
				out[c.ID] = true
			}
		}
		return out
	}
	return nil
}

// jsonText returns s as the inside of a JSON string literal.
func jsonText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}
