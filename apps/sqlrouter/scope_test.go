package sqlrouter

import (
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/router"
)

// Asked something outside its scenario (customers, another year), the
// scripted router says what it can demonstrate instead of answering the
// scenario's question as if it were the one asked; the scenario's own
// question, however put, still runs.
func TestScriptSaysWhatItCanDemonstrate(t *testing.T) {
	for _, q := range []string{"How many customers do we have?", "Which genres were borrowed most in 2024?"} {
		ro, _ := sample(t)
		s := run(t, Script(), ro, q)
		o, ok := router.Finished(s)
		if !ok || o.Answer != Scope || strings.Contains(o.Answer, "fiction: 8 loans") {
			t.Errorf("%q: outcome %+v", q, o)
		}
	}
	ro, _ := sample(t)
	if o, _ := router.Finished(run(t, Script(), ro, "Question 10: loans per genre?")); !strings.HasPrefix(o.Answer, "Loans per genre in 2025") {
		t.Errorf("the scenario's question: %+v", o)
	}
}
