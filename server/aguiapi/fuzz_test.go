package aguiapi

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/trellis-agents/trellis/server/api/wire"
)

// FuzzDecodeRunAgentInput: any body decodes to an input or a problem, and
// a decoded input validates to a request or a problem naming a field —
// never a panic. Seeds: the HttpAgent's captured requests.
func FuzzDecodeRunAgentInput(f *testing.F) {
	for _, name := range []string{"agui_run", "agui_resume"} {
		raw, err := os.ReadFile("../api/spec/testdata/sdk/" + name + ".json")
		if err != nil {
			f.Fatal(err)
		}
		var fx struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &fx); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(fx.Body))
	}
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"tool"}]}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[],"context":[{"description":"d","value":"v"}],"forwardedProps":{"configurable":{"a":1},"command":{"resume":true}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, p := wire.DecodeBytes[RunAgentInput](body)
		if p != nil {
			if p.Status < 400 || p.Status > 499 {
				t.Fatalf("status %d for a bad body", p.Status)
			}
			return
		}
		rq, p := validate(in)
		if p != nil {
			if len(p.Errors) == 0 || p.Errors[0].Pointer == "" && p.Errors[0].Detail == "" {
				t.Fatalf("a refusal without a field: %+v", p)
			}
			return
		}
		if len(rq.turns) != len(rq.msgs) {
			t.Fatalf("%d turns for %d messages", len(rq.turns), len(rq.msgs))
		}
	})
}
