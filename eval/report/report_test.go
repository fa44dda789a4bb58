package report_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/report"
)

func trial(caseID string, rep int, score float64, err string) eval.TrialResult {
	t := eval.TrialResult{Case: caseID, Repetition: rep, ThreadID: eval.ThreadID("x", caseID, rep, 0), Latency: 1500 * time.Millisecond, Error: err,
		Scores: []eval.CriterionResult{{Evaluator: "exact", Threshold: 1, Score: score, Pass: score >= 1, Explanation: "expected <b>x</b>"}}}
	t.Pass = err == "" && t.Scores[0].Pass
	return t
}

func experiment(name string, scores map[string][]float64) *eval.Experiment {
	e := &eval.Experiment{Name: name, Dataset: "ds", Target: "planner", Repeat: 2}
	for _, id := range []string{"alpha", "beta", "gamma"} {
		c := eval.CaseResult{ID: id}
		for rep, s := range scores[id] {
			c.Trials = append(c.Trials, trial(id, rep, s, ""))
		}
		e.Cases = append(e.Cases, c)
	}
	e.Summarize()
	return e
}

func TestJUnit(t *testing.T) {
	e := experiment("now", map[string][]float64{"alpha": {1, 1}, "beta": {1, 0.5}, "gamma": {0, 0}})
	e.Cases[2].Trials[1].Error = "unanswered question"
	var buf bytes.Buffer
	if err := report.JUnit(&buf, e, "http://127.0.0.1:8123"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	if doc.Tests != 3 || doc.Failures != 2 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 3 {
		t.Fatalf("%+v", doc)
	}
	cs := doc.Suites[0].Cases
	if cs[0].Name != "alpha" || cs[0].Failure != nil || !strings.Contains(cs[0].Out, "http://127.0.0.1:8123/#/thread/"+eval.ThreadID("x", "alpha", 0, 0)) {
		t.Errorf("alpha: %+v", cs[0])
	}
	if f := cs[1].Failure; f == nil || f.Message != "1 of 2 repetitions failed" || !strings.Contains(f.Text, "repetition 1: exact scored 0.5 (needs 1): expected <b>x</b>") {
		t.Errorf("beta: %+v", cs[1].Failure)
	}
	if f := cs[2].Failure; f == nil || !strings.Contains(f.Text, "repetition 1: the run failed: unanswered question") {
		t.Errorf("gamma: %+v", cs[2].Failure)
	}
}

// htmlDoc parses the page as HTML (no XML strictness) and collects what
// the test checks.
type htmlDoc struct {
	svgs, rects, circles int
	rows                 map[string]string // data-case → class
	links                []string
	text                 strings.Builder
	external             []string
}

func parseHTML(t *testing.T, b []byte) *htmlDoc {
	t.Helper()
	d := &htmlDoc{rows: map[string]string{}}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict, dec.AutoClose, dec.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the page does not parse: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range x.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch x.Name.Local {
			case "svg":
				d.svgs++
			case "rect":
				d.rects++
			case "circle":
				d.circles++
			case "tr":
				if id, ok := attr["data-case"]; ok {
					d.rows[id] = attr["class"]
				}
			case "a":
				d.links = append(d.links, attr["href"])
			case "script", "link", "img":
				d.external = append(d.external, x.Name.Local)
			}
		case xml.CharData:
			d.text.Write(x)
		}
	}
	return d
}

func TestHTML(t *testing.T) {
	base := experiment("base", map[string][]float64{"alpha": {1, 1}, "beta": {1, 1}, "gamma": {0, 0}})
	now := experiment("now", map[string][]float64{"alpha": {1, 1}, "beta": {0, 0.5}, "gamma": {1, 1}})
	now.Comparison = eval.Compare(base, now, 1)
	now.Cases[0].Trials[0].Simulated = []eval.SimulatedTurn{{Kind: "answer", Question: "Which city?", Value: []byte(`"Lisbon"`)}, {Kind: "done", Text: "booked"}}
	var buf bytes.Buffer
	if err := report.HTML(&buf, now, ""); err != nil {
		t.Fatal(err)
	}
	d := parseHTML(t, buf.Bytes())
	if len(d.external) > 0 {
		t.Errorf("the page loads %v; it must be self-contained", d.external)
	}
	if d.svgs != 2 || d.rects != 10 || d.circles != 6 {
		t.Errorf("plots: %d svgs, %d bars, %d dots; want a histogram of 10 bars and a comparison of 3 cases × 2 dots", d.svgs, d.rects, d.circles)
	}
	if d.rows["alpha"] != "pass" || d.rows["beta"] != "fail" || d.rows["gamma"] != "pass" || len(d.rows) != 3 {
		t.Errorf("case rows %v", d.rows)
	}
	if len(d.links) != 6 || d.links[0] != "/#/thread/"+eval.ThreadID("x", "alpha", 0, 0) {
		t.Errorf("links %v", d.links)
	}
	text := d.text.String()
	for _, want := range []string{"Against base", "1 regression(s) beta", "1 improvement(s) gamma", "expected <b>x</b>", "pass@2",
		"What the simulated user said (2)", `answer to “Which city?”: "Lisbon"`, "done: booked"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

func TestTable(t *testing.T) {
	base := experiment("base", map[string][]float64{"alpha": {1, 1}, "beta": {1, 1}, "gamma": {0, 0}})
	now := experiment("now", map[string][]float64{"alpha": {1, 1}, "beta": {0, 0.5}, "gamma": {0, 0}})
	now.Comparison = eval.Compare(base, now, 1)
	var buf bytes.Buffer
	if err := report.Table(&buf, now); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"beta", "FAIL", "0/2", "exact: expected <b>x</b>", "1 of 3 cases passed", "pass@2", "regressions: beta"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}
