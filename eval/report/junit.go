// Package report renders an eval.Experiment for people and CI: JUnit XML
// (one test case per case), a plain-text table, and a self-contained HTML
// page with inline SVG plots. Each is a view of the experiment; none adds
// data to it.
package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/trellis-agents/trellis/eval"
)

// JUnit types: the subset CI systems read.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Time     float64      `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Time       float64         `xml:"time,attr"`
		Properties []junitProperty `xml:"properties>property,omitempty"`
		Cases      []junitCase     `xml:"testcase"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      float64       `xml:"time,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// JUnit writes exp as JUnit XML: one <testsuite> for the experiment, one
// <testcase> per case, failed when any repetition failed, with the failing
// criteria's explanations (and the runs' errors) in the <failure>. pageURL,
// when set, is the server's URL: each case's output names the threads'
// pages.
func JUnit(w io.Writer, exp *eval.Experiment, pageURL string) error {
	s := junitSuite{Name: exp.Dataset, Properties: []junitProperty{
		{"experiment", exp.Name}, {"target", exp.Target}, {"repeat", fmt.Sprint(exp.Repeat)},
		{"pass_rate", fmt.Sprintf("%.4f", exp.Summary.PassRate.Value)},
	}}
	for _, c := range exp.Cases {
		jc := junitCase{Name: c.ID, Classname: exp.Dataset}
		var fails, out []string
		for _, t := range c.Trials {
			jc.Time += t.Latency.Seconds()
			out = append(out, fmt.Sprintf("repetition %d: thread %s%s", t.Repetition, pageURL, eval.PagePath(t.ThreadID)))
			if t.Pass {
				continue
			}
			if t.Error != "" {
				fails = append(fails, fmt.Sprintf("repetition %d: the run failed: %s", t.Repetition, t.Error))
			}
			for _, sc := range t.Scores {
				if sc.Pass {
					continue
				}
				why := sc.Explanation
				if sc.Error != "" {
					why = "could not score: " + sc.Error
				}
				fails = append(fails, fmt.Sprintf("repetition %d: %s scored %.3g (needs %.3g): %s", t.Repetition, sc.Evaluator, sc.Score, sc.Threshold, why))
			}
		}
		if len(c.Trials) == 0 {
			fails = append(fails, "the case did not run")
		}
		if len(fails) > 0 {
			msg := fmt.Sprintf("%d of %d repetitions failed", len(c.Trials)-c.Passed, len(c.Trials))
			if len(c.Trials) == 0 {
				msg = "not run"
			}
			jc.Failure = &junitFailure{Message: msg, Type: "eval", Text: strings.Join(fails, "\n")}
			s.Failures++
		}
		jc.SystemOut = strings.Join(out, "\n")
		s.Tests++
		s.Time += jc.Time
		s.Cases = append(s.Cases, jc)
	}
	doc := junitSuites{Name: exp.Name, Tests: s.Tests, Failures: s.Failures, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
