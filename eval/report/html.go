package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/trellis-agents/trellis/eval"
)

// HTML writes exp as one self-contained page (no scripts, fonts or
// images from elsewhere): the summary with intervals, an inline SVG
// histogram of each criterion's scores, a per-case plot of the scores
// against the baseline when there is a comparison, and a row per case with
// each repetition's verdicts and explanations. pageURL, when set, links
// every repetition to its thread on the server's page.
func HTML(w io.Writer, exp *eval.Experiment, pageURL string) error {
	v := view{Exp: exp, S: exp.Summary, PageURL: pageURL}
	for _, c := range exp.Summary.Criteria {
		v.Plots = append(v.Plots, plot{Title: c.Evaluator, SVG: histogram(c.Scores)})
	}
	if exp.Comparison != nil {
		v.Compare = template.HTML(comparison(exp.Comparison))
	}
	return page.Execute(w, v)
}

type view struct {
	Exp     *eval.Experiment
	S       eval.Summary
	PageURL string
	Plots   []plot
	Compare template.HTML
}

type plot struct {
	Title string
	SVG   template.HTML
}

const (
	plotW, plotH = 320, 140
	bins         = 10
)

// histogram draws scores in ten bins over [0, 1].
func histogram(scores []float64) template.HTML {
	counts := make([]int, bins)
	top := 1
	for _, s := range scores {
		i := min(int(s*bins), bins-1)
		i = max(i, 0)
		counts[i]++
		top = max(top, counts[i])
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="hist" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="score distribution">`, plotW, plotH+20, plotW, plotH+20)
	bw := float64(plotW) / bins
	for i, n := range counts {
		h := float64(plotH-10) * float64(n) / float64(top)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4a7bd0"><title>%.1f–%.1f: %d</title></rect>`,
			float64(i)*bw+1, float64(plotH)-h, bw-2, h, float64(i)/bins, float64(i+1)/bins, n)
	}
	fmt.Fprintf(&b, `<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#888"/>`, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<text x="0" y="%d" font-size="11">0</text><text x="%d" y="%d" font-size="11" text-anchor="end">1</text>`, plotH+14, plotW, plotH+14)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// comparison draws each common case's baseline and current mean scores:
// a grey dot for the baseline, a coloured one for now (red a regression,
// green an improvement), joined by a line.
func comparison(c *eval.Comparison) string {
	n := len(c.Cases)
	width := max(320, 24*n+40)
	const h = 180
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="cmp" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="scores against the baseline">`, width, h+20, width, h+20)
	y := func(s float64) float64 { return 10 + (1-s)*float64(h-20) }
	fmt.Fprintf(&b, `<line x1="30" y1="%.1f" x2="%d" y2="%.1f" stroke="#ccc"/><line x1="30" y1="%.1f" x2="%d" y2="%.1f" stroke="#ccc"/>`, y(0), width, y(0), y(1), width, y(1))
	fmt.Fprintf(&b, `<text x="0" y="%.1f" font-size="11">1</text><text x="0" y="%.1f" font-size="11">0</text>`, y(1)+4, y(0)+4)
	for i, d := range c.Cases {
		x := 40 + float64(i)*24
		col := "#4a7bd0"
		switch d.Change {
		case "regression":
			col = "#c0392b"
		case "improvement":
			col = "#27ae60"
		}
		fmt.Fprintf(&b, `<g class="case"><title>%s: %.2f → %.2f</title><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/><circle cx="%.1f" cy="%.1f" r="4" fill="#aaa"/><circle cx="%.1f" cy="%.1f" r="4" fill="%s"/></g>`,
			template.HTMLEscapeString(d.ID), d.BaseScore, d.Score, x, y(d.BaseScore), x, y(d.Score), col, x, y(d.BaseScore), x, y(d.Score), col)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":   func(iv eval.Interval) string { return pct(iv) },
	"score": func(f float64) string { return fmt.Sprintf("%.3f", f) },
	"page":  eval.PagePath,
	"dur":   func(d interface{ Seconds() float64 }) string { return fmt.Sprintf("%.2fs", d.Seconds()) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Exp.Name}} — {{.Exp.Dataset}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:4px 8px;vertical-align:top;text-align:left}
tr.fail td.res{color:#c0392b;font-weight:bold}tr.pass td.res{color:#1e7b45}
.plots{display:flex;flex-wrap:wrap;gap:2em}.plots figure{margin:0}
.why{font-size:12px;color:#555;white-space:pre-wrap}.sim{font-size:12px}
</style></head><body>
<h1>{{.Exp.Name}}</h1>
<p>Dataset <b>{{.Exp.Dataset}}</b>{{with .Exp.DatasetVersion}} version {{.}}{{end}} against <b>{{.Exp.Target}}</b>, {{.Exp.Repeat}} repetition(s), {{.Exp.Started.Format "2006-01-02 15:04:05"}} to {{.Exp.Finished.Format "15:04:05"}} UTC.</p>
<table id="summary">
<tr><th>Cases passed</th><td>{{.S.CasesPassed}} of {{.S.Cases}} — {{pct .S.CasePassRate}}</td></tr>
<tr><th>Repetitions passed</th><td>{{.S.TrialsPassed}} of {{.S.Trials}} — {{pct .S.PassRate}}</td></tr>
{{if gt .Exp.Repeat 1}}<tr><th>pass@{{.S.K}} / pass^{{.S.K}}</th><td>{{score .S.PassAtK}} / {{score .S.PassHatK}}, consistency {{score .S.Consistency}}</td></tr>{{end}}
<tr><th>Mean score</th><td>{{score .S.MeanScore.Value}} [{{score .S.MeanScore.Low}}, {{score .S.MeanScore.High}}]</td></tr>
{{range .S.Criteria}}<tr><th>{{.Evaluator}}</th><td>pass {{pct .PassRate}}, mean {{score .MeanScore.Value}} [{{score .MeanScore.Low}}, {{score .MeanScore.High}}]{{if .Errors}}, {{.Errors}} could not score{{end}}</td></tr>{{end}}
</table>
<h2>Score distributions</h2>
<div class="plots">{{range .Plots}}<figure><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>{{end}}</div>
{{with .Exp.Comparison}}<h2>Against {{.Baseline}}</h2>
<p>Mean score change {{printf "%+.3f" .MeanDelta.Value}} [{{printf "%+.3f" .MeanDelta.Low}}, {{printf "%+.3f" .MeanDelta.High}}], p = {{printf "%.3f" .PValue}} (paired bootstrap, {{.Resamples}} resamples, seed {{.Seed}}){{if .Significant}}, significant{{end}}.
{{len .Regressions}} regression(s){{range .Regressions}} <b>{{.}}</b>{{end}}; {{len .Improvements}} improvement(s){{range .Improvements}} <b>{{.}}</b>{{end}}.</p>
<div class="plots"><figure><figcaption>per case: baseline (grey) → now</figcaption>{{$.Compare}}</figure></div>{{end}}
<h2>Cases</h2>
<table id="cases"><tr><th>Case</th><th>Result</th><th>Repetitions</th></tr>
{{range .Exp.Cases}}<tr class="{{if .Pass}}pass{{else}}fail{{end}}" data-case="{{.ID}}"><td>{{.ID}}{{range .Tags}} <small>#{{.}}</small>{{end}}</td><td class="res">{{if .Pass}}pass{{else}}FAIL{{end}} {{.Passed}}/{{len .Trials}}, score {{score .MeanScore}}</td><td>
{{range .Trials}}<div><a href="{{$.PageURL}}{{page .ThreadID}}">#{{.Repetition}}</a> {{if .Pass}}pass{{else}}fail{{end}} in {{dur .Latency}}{{with .Error}} — <b>{{.}}</b>{{end}}
{{range .Scores}}<div class="why">{{.Evaluator}} {{score .Score}}/{{score .Threshold}}{{if .Error}} could not score: {{.Error}}{{else}}{{with .Explanation}}: {{.}}{{end}}{{end}}</div>{{end}}
{{with .Simulated}}<details class="sim"><summary>What the simulated user said ({{len .}})</summary><ol>{{range .}}<li>{{.Kind}}{{with .Question}} to “{{.}}”{{end}}{{with .Text}}: {{.}}{{end}}{{with .Value}}: {{printf "%s" .}}{{end}}</li>{{end}}</ol></details>{{end}}</div>{{end}}
</td></tr>
{{end}}</table>
</body></html>
`))
