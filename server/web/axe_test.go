package web_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// axeViolation is one rule axe-core found broken, with the elements.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any `json:"target"`
	} `json:"nodes"`
}

// checkA11y runs the vendored axe-core on the page as it is and fails the
// test on serious or critical violations (WCAG 2.x A and AA rules).
func (b *browser) checkA11y(screen string) {
	b.t.Helper()
	src, err := os.ReadFile("testdata/axe/axe.min.js")
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](string(src)+";undefined")); err != nil {
		b.t.Fatalf("loading axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})
		.then((r) => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("running axe-core: %v", err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		b.t.Fatal(err)
	}
	for _, v := range vs {
		if v.Impact != "serious" && v.Impact != "critical" {
			continue
		}
		var where []string
		for _, n := range v.Nodes {
			b, _ := json.Marshal(n.Target)
			where = append(where, string(b))
		}
		b.t.Errorf("%s screen: %s (%s): %s at %s", screen, v.ID, v.Impact, v.Help, strings.Join(where, ", "))
	}
}
