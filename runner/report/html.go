package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"halu/localmodels"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// HTML writes one self-contained page for runs: no script, no external
// style sheet, font or image — charts are inline SVG — so it opens from
// disk on a machine with no network. Every string that came from a model
// or a data file goes through html/template's escaping, so an answer that
// contains "<script>" or "</table>" shows as text. A Content-Security-Policy
// that allows no script backs that up. The same runs give the same bytes:
// nothing in the page depends on the time or on map order.
func HTML(w io.Writer, runs []*Run) error {
	browsers, err := Browsers(runs)
	if err != nil {
		return err
	}
	page := pageData{Title: "halu report", Browsers: browsers}
	boards, err := Boards(runs)
	if err != nil {
		return err
	}
	page.Boards = boards
	for i, r := range runs {
		rv, err := runView(i, r)
		if err != nil {
			return err
		}
		page.Runs = append(page.Runs, rv)
		page.Tiny = page.Tiny || r.Summary.TinyModel
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, page); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

type pageData struct {
	Title    string
	Tiny     bool
	Boards   []Board
	Runs     []runData
	Browsers []Browser
}

// boardView is a board's rows in one order, for the "board" template.
type boardView struct {
	Metrics []BoardMetric
	Rows    []BoardRow
}

func sortedBoard(b Board, s BoardSort) boardView {
	v := boardView{Metrics: b.Metrics}
	for _, i := range s.Rows {
		v.Rows = append(v.Rows, b.Rows[i])
	}
	return v
}

type runData struct {
	Anchor, Name, Dir string
	M                 *rundir.Manifest
	S                 *summary.Summary
	Note              string
	Next              string
	Verified          string
	Regenerated       bool
	Charts            []chartData
	References        []RefView
	Failures          []FailureGroup
	Calls             []callRow
	Flags             [][2]string
	Prompts           []promptData
	Datasets          [][3]string
	Config            string
}

type chartData struct {
	Title string
	SVG   template.HTML
	Error string
}

type promptData struct{ Name, SHA, Source, Text string }

func runView(i int, r *Run) (runData, error) {
	m := r.Manifest
	d := runData{Anchor: fmt.Sprintf("run%d", i+1), Name: r.Name(), Dir: r.Dir, M: m, S: r.Summary, Note: r.Note, Verified: r.Verified,
		Next: NextSteps(r), Regenerated: r.Regenerated, Config: prettyJSON(m.Config)}
	for _, c := range r.Summary.Charts {
		cd := chartData{Title: c.Title}
		if Empty(c) {
			cd.Error = "nothing measured: no value to draw"
			d.Charts = append(d.Charts, cd)
			continue
		}
		svg, err := SVG(c)
		if err != nil {
			cd.Error = err.Error()
		} else {
			cd.SVG = template.HTML(inlineSVG(svg)) // gonum/plot escapes the text it writes
		}
		d.Charts = append(d.Charts, cd)
	}
	refs, err := References(m.Suite)
	if err != nil {
		return d, err
	}
	for _, ref := range refs {
		v := ref.Prove(r.Facts)
		d.References = append(d.References, RefView{Reference: ref, Verdict: v, Why: v.Headline(), Proof: v.ProofTable()})
	}
	d.Failures = r.failures
	d.Calls = r.calls
	var keys []string
	for k := range m.Flags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.Flags = append(d.Flags, [2]string{k, m.Flags[k]})
	}
	keys = keys[:0]
	for k := range m.Prompts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := m.Prompts[k]
		d.Prompts = append(d.Prompts, promptData{Name: k, SHA: p.SHA256, Source: p.Source, Text: p.Text})
	}
	keys = keys[:0]
	for k := range m.Datasets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.Datasets = append(d.Datasets, [3]string{k, m.Datasets[k].Path, m.Datasets[k].SHA256})
	}
	return d, nil
}

// inlineSVG drops the XML prolog of an SVG document so that it can stand
// inside HTML.
func inlineSVG(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"short": localmodels.ShortDigest,
	"board": sortedBoard,
	"clip":  clip,
	"join":  strings.Join,
	"params": func(n int64) string {
		switch {
		case n >= 1e9:
			return fmt.Sprintf("%.1fB", float64(n)/1e9)
		case n >= 1e6:
			return fmt.Sprintf("%.1fM", float64(n)/1e6)
		case n >= 1e3:
			return fmt.Sprintf("%.0fK", float64(n)/1e3)
		}
		return fmt.Sprint(n)
	},
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;color:#1b1b1b;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-top:3px solid #0072b2;padding-top:.6em;margin-top:2em}h3{margin-top:1.6em;font-size:1.1em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.86em}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#eef3f8}tr:nth-child(even) td{background:#fafafa}
.banner{background:#fff3cd;border:2px solid #e6a100;padding:.8em 1em;font-weight:600;margin:1em 0}
.note{color:#444;font-size:.9em}.muted{color:#666}.chart{margin:1em 0;overflow-x:auto}
pre{background:#f6f8fa;border:1px solid #ddd;padding:.6em;overflow-x:auto;white-space:pre-wrap;word-break:break-word;font-size:.82em;max-height:28em}
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}.ref{border-left:4px solid #e69f00;padding-left:.8em}
code{font-size:.9em}nav li{margin:.15em 0}
.chart svg text{font-family:inherit!important}
.board td{white-space:nowrap}.board tr.published td{background:#fdf6e3;color:#444}
.b{display:inline-block;font-size:.75em;font-weight:600;border-radius:3px;padding:0 .4em;margin-left:.4em;background:#eee}
.b.h{background:#f8d7da}.b.d{background:#fff3cd}.b.u{background:#e2e3e5}.b.r{background:#d1ecf1}.b.c{background:#e8daef}
.entry{border-left:3px solid #ccc;padding-left:.8em;margin:.6em 0}details.sample{border-bottom:1px solid #eee;padding:.2em 0}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="muted">Generated by halu from run directories (manifest.json and records.jsonl); no model was called to make this page.</p>
{{if .Tiny}}<div class="banner" id="tiny-warning">Warning: a toy-sized test model (under 10M parameters, such as halu's random-weight tiny model) produced some of these numbers. They are meaningless as measurements and only show that the pipeline ran.</div>{{end}}
<nav><ul>{{range .Boards}}<li><a href="#board-{{.Suite}}">Leaderboard: {{.Suite}}</a></li>{{end}}{{range .Runs}}<li><a href="#{{.Anchor}}">{{.Name}}</a> — {{.M.StatusText}}, {{.S.Counts.Completed}} of {{.S.Counts.Items}} items</li>{{end}}{{range .Browsers}}<li><a href="#{{.Anchor}}">Samples: {{.Suite}}</a></li>{{end}}</ul></nav>
{{if .Boards}}<h2 id="leaderboards">Leaderboards</h2>
<p class="note">One row per run, model and group; one column per headline figure of the paper. A cell is the estimate [95% interval] with n, the units it rests on, and the units left unscored; “–” means nothing was measured, never a value. Intervals are Wilson for shares and t for means (the long CSV names each). Other orders are under “sorted by”.</p>
{{range $b := .Boards}}<h3 id="board-{{$b.Suite}}">{{$b.Suite}}</h3>
{{with $b.Glossary}}<p class="note"><b>Abbreviations:</b> {{.}}</p>{{end}}
{{range $i, $s := $b.Sorts}}{{if eq $i 0}}<p class="muted">sorted by {{$s.Metric}}, best first</p>{{template "board" (board $b $s)}}{{else}}<details><summary>sorted by {{$s.Metric}}</summary>{{template "board" (board $b $s)}}</details>{{end}}{{end}}
{{range $b.Notes}}<p class="note">{{.}}</p>{{end}}
{{end}}{{end}}
{{range .Runs}}
<section id="{{.Anchor}}">
<h2>{{.Name}}</h2>
{{if .S.TinyModel}}<div class="banner">A toy-sized test model produced numbers in this run: they are meaningless.</div>{{end}}
<p>Directory <code>{{.Dir}}</code> · status <b>{{.M.StatusText}}</b> · halu {{.M.HaluVersion}} · Ollama {{.M.Server.Version}} at <code>{{.M.Server.Host}}</code> · started {{.M.Started.Format "2006-01-02 15:04:05 UTC"}}{{with .M.Ended}} · ended {{.Format "2006-01-02 15:04:05 UTC"}}{{end}}</p>
{{with .M.Measured}}{{with .Closing}}<div class="banner">{{.}}</div>{{end}}{{end}}
{{with .M.Paper}}<p class="note"><b>Paper:</b> {{.}}</p>{{end}}
{{with .Verified}}<p class="note"><b>Verified:</b> {{.}}</p>{{end}}
{{with .S.GlossaryLine}}<p class="note"><b>Abbreviations:</b> {{.}}</p>{{end}}
{{with .Next}}<p class="note"><b>Next:</b> {{.}}</p>{{end}}
{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
<h3>Models</h3>
<table><tr><th>model</th><th>digest</th><th>family</th><th>parameters</th><th>quantization</th><th>context</th><th>template SHA-256</th></tr>
{{range .M.Models}}<tr><td>{{.Name}}</td><td><code title="{{.Digest}}">{{short .Digest}}</code></td><td>{{.Family}}</td><td>{{if .ParameterCount}}{{params .ParameterCount}}{{else}}{{.ParameterSize}}{{end}}</td><td>{{.Quantization}}</td><td>{{.ContextLength}}</td><td><code title="{{.TemplateSHA256}}">{{short .TemplateSHA256}}</code></td></tr>
{{end}}</table>
<h3>Counts and failures</h3>
{{with .S.Counts}}<table><tr><th>items</th><th>completed</th><th>failed items</th><th>unscored judgements (unparseable replies)</th><th>model calls</th><th>cache hits</th><th>retries</th><th>tokens in</th><th>tokens out</th><th>stopped at budget</th><th>repetition stops</th><th>prompts near num_ctx</th><th>damaged cache entries refetched</th><th>replies not cached (write failed)</th></tr>
<tr><td>{{.Items}}</td><td>{{.Completed}}</td><td>{{.Failed}}</td><td>{{.JudgeFailures}}</td><td>{{.ModelCalls}}</td><td>{{.CacheHits}}</td><td>{{.Retries}}</td><td>{{.PromptTokens}}</td><td>{{.GeneratedToken}}</td><td>{{.StoppedBudget}}</td><td>{{.StoppedRepetition}}</td><td>{{.NearContext}}</td><td>{{.CacheDamaged}}</td><td>{{.CacheWriteFailures}}</td></tr></table>{{end}}
<p class="note">Refusals, excluded items and panel ties are counted in the suite's own tables below.</p>
{{range .S.Tables}}
<h3>{{.Title}}</h3>
{{if .Rows}}<table><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{else}}<p class="note">no rows: {{.WhyEmpty}}</p>{{end}}
{{end}}
{{range .Charts}}<div class="chart"><h3>{{.Title}}</h3>{{if .Error}}<p class="note">no chart: {{.Error}}</p>{{else}}{{.SVG}}{{end}}</div>
{{end}}
{{if .References}}<h3>Published numbers for comparison</h3>
{{range .References}}<details class="ref"><summary>{{.Source}} — <b>{{.Label}}</b></summary><p class="note">{{.Why}}</p>
{{with .Proof}}{{if .Rows}}<table class="proof"><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{end}}
<table><tr>{{range .Table.Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Table.Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{range .Notes}}<p class="note"><b>Transcription check:</b> {{.}}</p>{{end}}<p class="note">Source: {{.Source}} (file reference/{{.File}}). The published models are not the ones run here; the layout is the same.</p></details>
{{end}}{{end}}
{{if .S.Notes}}<h3>Notes</h3><ul>{{range .S.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h3>Model calls by stage</h3>
<table><tr><th>model</th><th>stage</th><th>calls</th><th>judge repair turns</th><th>prompt tokens</th><th>output tokens</th><th>cut short (length, budget, repetition)</th><th>prompts near num_ctx</th></tr>
{{range .Calls}}<tr><td>{{.Model}}</td><td>{{.Stage}}</td><td>{{.Calls}}</td><td>{{.Repairs}}</td><td>{{.PromptTokens}}</td><td>{{.Tokens}}</td><td>{{.Truncated}}</td><td>{{.NearWindow}}</td></tr>
{{end}}</table>
{{if .Failures}}<h3>Unscored judgements</h3>
<p class="note">Each judge reply below failed to parse after its repair turns. It is recorded as unscored (never as a zero or a guess), with every raw reply.</p>
{{range $g := .Failures}}<details><summary>{{$g.Stage}} · {{$g.Model}}: {{$g.Count}} unscored</summary>
{{range $i, $f := $g.Examples}}<p class="note">{{index $g.Items $i}}: {{$f.Reason}}</p>{{range $f.Raw}}<pre>{{clip . 1500}}</pre>{{end}}{{end}}
</details>{{end}}{{end}}
<p class="note">Every item of this run, with its prompt, answers and judges' replies, is in the sample browser at the end of the page.</p>
<h3>Settings</h3>
<details><summary>Suite configuration (seeds included)</summary><pre>{{.Config}}</pre></details>
{{if .Flags}}<details><summary>Effective command-line settings</summary><table>{{range .Flags}}<tr><td><code>--{{index . 0}}</code></td><td>{{index . 1}}</td></tr>{{end}}</table></details>{{end}}
<details><summary>Command line</summary><pre>halu {{join .M.Args " "}}</pre></details>
{{if .Datasets}}<details><summary>Datasets</summary><table><tr><th>name</th><th>path</th><th>SHA-256</th></tr>{{range .Datasets}}<tr><td>{{index . 0}}</td><td><code>{{index . 1}}</code></td><td><code>{{index . 2}}</code></td></tr>{{end}}</table></details>{{end}}
<h3>Prompts</h3>
{{range .Prompts}}<details><summary>{{.Name}} <code>{{short .SHA}}</code></summary>{{if .Source}}<p class="note">Source: {{.Source}}</p>{{end}}<p class="note">SHA-256 {{.SHA}}</p><pre>{{.Text}}</pre></details>
{{end}}
</section>
{{end}}
{{range $br := .Browsers}}<section id="{{$br.Anchor}}"><h2>Samples: {{$br.Suite}}</h2>
<p class="note">{{len $br.Groups}} prompts{{if gt $br.Total (len $br.Groups)}} (the first {{len $br.Groups}} of {{$br.Total}}){{end}}{{if $br.Unshown}}; {{$br.Unshown}} of the {{$br.Records}} records not shown (<code>halu report --samples FILE.jsonl</code> writes every record){{end}}. Answers to one prompt, from every model and run given, sit together: the prompt as sent, each answer, each judge's verdict as read beside its raw reply. Lists of the items with each flag come first.</p>
{{range $br.Filters}}<details><summary>{{.Name}} ({{len .Links}})</summary>{{if .Links}}<p>{{range .Links}}<a href="#{{.Anchor}}">{{.Label}}</a> · {{end}}</p>{{else}}<p class="muted">none</p>{{end}}</details>
{{end}}
{{range $br.Groups}}<details id="{{.Anchor}}" class="sample"><summary>{{.Label}}{{if gt (len .Entries) 1}} · {{len .Entries}} records{{end}}{{template "badges" .Flags}}</summary>
{{if .Prompt}}<details><summary>prompt as sent</summary><pre>{{.Prompt}}</pre></details>{{end}}
{{range .Entries}}<div class="entry"><p><b>{{.Run}}</b> · <code>{{.Item}}</code>{{template "badges" .Flags}}</p>
{{range .Answers}}<p class="muted">{{.Stage}} · {{.Model}}{{if .DoneReason}} · {{.DoneReason}}{{end}}</p><pre>{{.Reply}}</pre>
{{end}}{{if .Judges}}<table><tr><th>stage</th><th>judge</th><th>verdict as read</th><th>raw reply</th></tr>
{{range .Judges}}<tr><td>{{.Stage}}</td><td>{{.Model}}</td><td>{{if .Parsed}}<code>{{.Parsed}}</code>{{else}}<span class="muted">not read</span>{{end}}</td><td><details><summary>{{clip .Reply 60}}</summary><pre>{{.Reply}}</pre></details></td></tr>
{{end}}</table>{{if .MoreJudges}}<p class="muted">… and {{.MoreJudges}} more judge calls (<code>--samples</code> has them all)</p>{{end}}{{end}}{{range .Failures}}<p class="note">unscored: {{.Stage}} · {{.Model}}: {{.Reason}}</p>{{end}}{{if .Data}}<pre>{{.Data}}</pre>{{end}}
</div>{{end}}{{if .More}}<p class="muted">… and {{.More}} more records of this prompt, not shown (<code>--samples</code> has them all)</p>{{end}}</details>
{{end}}</section>
{{end}}
</body>
</html>
{{define "board"}}<table class="board"><tr><th>run</th><th>model</th><th>digest</th><th>group</th>{{range .Metrics}}<th>{{.Name}} {{if .Lower}}↓{{else}}↑{{end}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .Published}} class="published"{{end}}><td>{{if .Published}}published: {{.Published}}{{else}}{{.Run}}{{.Mark}}{{end}}</td><td>{{.Model}}</td><td><code>{{.Digest}}</code></td><td>{{.Group}}</td>{{range .Cells}}<td>{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{define "badges"}}{{if .Hallucinated}}<span class="b h">hallucinated</span>{{end}}{{if .Disagree}}<span class="b d">judges disagree</span>{{end}}{{if .Unscored}}<span class="b u">unscored</span>{{end}}{{if .Refused}}<span class="b r">refused</span>{{end}}{{if .CutShort}}<span class="b c">cut short</span>{{end}}{{if .AgainstPeople}}<span class="b d">judge ≠ people</span>{{end}}{{end}}`
