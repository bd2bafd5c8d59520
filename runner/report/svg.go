package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"halu/runner/summary"
)

// Charts are drawn with gonum/plot (gonum.org/v1/plot): it renders SVG
// without cgo, a browser or a font download (its Liberation fonts are
// compiled in and named, not embedded), gives the same bytes for the same
// data, and escapes every string it writes — labels here include model
// names and dataset categories.

// palette is the Okabe–Ito colour-blind-safe set.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{86, 180, 233, 255}, color.RGBA{213, 94, 0, 255},
	color.RGBA{240, 228, 66, 255}, color.RGBA{0, 0, 0, 255},
}

func colour(i int) color.Color { return palette[i%len(palette)] }

// SVG draws c as an SVG document.
func SVG(c summary.Chart) ([]byte, error) {
	switch c.Kind {
	case "bars":
		return bars(c)
	case "histogram":
		return bars(histogramBars(c))
	case "scatter":
		return scatter(c)
	case "heatmap":
		return heatmap(c)
	case "curves":
		return curves(c)
	}
	return nil, fmt.Errorf("chart %q: unknown kind %q", c.Title, c.Kind)
}

// newPlot starts a chart without a title (the page prints it once, above
// the chart, in its own font) and in the sans-serif face: the page's style
// makes the SVG's text take the page's font family, and the sans metrics
// keep the layout close to it.
func newPlot(c summary.Chart) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = c.X
	p.Y.Label.Text = c.Y
	for _, st := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		st.Font = font.From(sans, st.Font.Size)
	}
	return p
}

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Empty reports whether c holds no finite value to draw: such a chart is
// not drawn at all (no empty frame), and the page says nothing was
// measured.
func Empty(c summary.Chart) bool {
	for _, se := range c.Series {
		if hasFinite(se.Values) {
			return false
		}
	}
	for _, pt := range c.Points {
		if finite(pt.X) && finite(pt.Y) {
			return false
		}
	}
	for _, row := range c.Cells {
		if hasFinite(row) {
			return false
		}
	}
	return true
}

func hasFinite(xs []summary.Num) bool {
	for _, x := range xs {
		if finite(x) {
			return true
		}
	}
	return false
}

func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	canvas := vgsvg.New(w, h)
	p.Draw(draw.New(canvas))
	var b bytes.Buffer
	if _, err := canvas.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func finite(x summary.Num) bool {
	f := float64(x)
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}

// bars draws grouped bars: group g's bar of series s at x = g + offset(s),
// with its interval as an error bar at the same x.
func bars(c summary.Chart) ([]byte, error) {
	p := newPlot(c)
	G, S := len(c.Groups), len(c.Series)
	if G == 0 || S == 0 {
		return nil, fmt.Errorf("chart %q: no data", c.Title)
	}
	width := vg.Length(math.Min(900, math.Max(480, float64(G*S)*28+160)))
	height := vg.Length(300)
	slot := 0.8 / float64(S) // data units per bar
	perUnit := (float64(width) - 90) / float64(G)
	barW := vg.Length(slot * perUnit * 0.9)
	top := 0.0
	drawn := 0
	for s, se := range c.Series {
		if !hasFinite(se.Values) {
			continue // a series with no value draws nothing, not even a legend entry
		}
		drawn++
		vals := make(plotter.Values, G)
		var errs plotter.XYs
		var yerr plotter.YErrors
		var nAt plotter.XYs
		var nText []string
		off := (float64(s) - float64(S-1)/2) * slot
		for g := 0; g < G; g++ {
			if g < len(se.Values) && finite(se.Values[g]) {
				vals[g] = float64(se.Values[g])
				top = math.Max(top, vals[g])
			}
			head := vals[g]
			if g < len(se.Lo) && g < len(se.Hi) && g < len(se.Values) && finite(se.Lo[g]) && finite(se.Hi[g]) && finite(se.Values[g]) {
				v := float64(se.Values[g])
				errs = append(errs, plotter.XY{X: float64(g) + off, Y: v})
				yerr = append(yerr, struct{ Low, High float64 }{v - float64(se.Lo[g]), float64(se.Hi[g]) - v})
				top = math.Max(top, float64(se.Hi[g]))
				head = math.Max(head, float64(se.Hi[g]))
			}
			if g < len(se.N) && se.N[g] > 0 && g < len(se.Values) && finite(se.Values[g]) {
				nAt = append(nAt, plotter.XY{X: float64(g) + off, Y: head})
				nText = append(nText, fmt.Sprintf("n=%d", se.N[g]))
			}
		}
		b, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", c.Title, err)
		}
		b.XMin = off
		b.Color = colour(s)
		b.LineStyle.Width = 0
		p.Add(b)
		if len(errs) > 0 {
			eb, err := plotter.NewYErrorBars(errPoints{errs, yerr})
			if err != nil {
				return nil, fmt.Errorf("chart %q: %w", c.Title, err)
			}
			eb.LineStyle.Width = vg.Points(1)
			p.Add(eb)
		}
		if len(nAt) > 0 {
			// Each share's n above its bar and whisker.
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: nAt, Labels: nText})
			if err != nil {
				return nil, fmt.Errorf("chart %q: %w", c.Title, err)
			}
			for i := range lb.TextStyle {
				lb.TextStyle[i].Font = font.From(sans, vg.Points(7))
				lb.TextStyle[i].XAlign = draw.XCenter
			}
			lb.Offset = vg.Point{Y: vg.Points(3)}
			p.Add(lb)
		}
		if S > 1 {
			p.Legend.Add(se.Name, b)
		}
	}
	if drawn == 0 {
		return nil, fmt.Errorf("chart %q: no data", c.Title)
	}
	p.Legend.Top = true
	p.NominalX(c.Groups...)
	p.X.Min, p.X.Max = -0.5, float64(G)-0.5
	p.Y.Min = 0
	if top <= 0 {
		top = 1
	}
	p.Y.Max = top * 1.2
	if G > 4 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
		height += 60
	}
	return render(p, width, height)
}

type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// histogramBars bins each series' values into c.Bins equal bins over
// [Min, Max] (the last bin closed) and draws the counts as bars.
func histogramBars(c summary.Chart) summary.Chart {
	n := c.Bins
	if n <= 0 {
		n = 10
	}
	lo, hi := float64(c.Min), float64(c.Max)
	if !(hi > lo) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, s := range c.Series {
			for _, v := range s.Values {
				if finite(v) {
					lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
				}
			}
		}
		if !(hi > lo) {
			lo, hi = lo-0.5, lo+0.5
		}
	}
	w := (hi - lo) / float64(n)
	out := summary.Chart{Kind: "bars", Title: c.Title, X: c.X, Y: c.Y}
	for i := 0; i < n; i++ {
		closing := ")"
		if i == n-1 {
			closing = "]"
		}
		out.Groups = append(out.Groups, fmt.Sprintf("[%.3g, %.3g%s", lo+float64(i)*w, lo+float64(i+1)*w, closing))
	}
	for _, s := range c.Series {
		counts := make([]float64, n)
		for _, v := range s.Values {
			if !finite(v) || float64(v) < lo || float64(v) > hi {
				continue
			}
			k := int((float64(v) - lo) / w)
			if k >= n {
				k = n - 1
			}
			counts[k]++
		}
		out.Series = append(out.Series, summary.Series{Name: s.Name, Values: summary.Nums(counts...)})
	}
	return out
}

func scatter(c summary.Chart) ([]byte, error) {
	p := newPlot(c)
	var pts plotter.XYs
	var labels []string
	var front plotter.XYs
	for _, pt := range c.Points {
		if !finite(pt.X) || !finite(pt.Y) {
			continue
		}
		xy := plotter.XY{X: float64(pt.X), Y: float64(pt.Y)}
		pts = append(pts, xy)
		labels = append(labels, pt.Label)
		if pt.Front {
			front = append(front, xy)
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("chart %q: no data", c.Title)
	}
	if len(front) > 1 {
		sort.Slice(front, func(i, j int) bool { return front[i].X < front[j].X })
		l, err := plotter.NewLine(front)
		if err != nil {
			return nil, err
		}
		l.Color = colour(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("Pareto front", l)
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color = colour(0)
	sc.GlyphStyle.Radius = vg.Points(4)
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	p.Add(sc)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font = font.From(sans, vg.Points(8))
		lb.TextStyle[i].XAlign = draw.XLeft
	}
	lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
	p.Add(lb)
	pad := func(min, max float64) (float64, float64) {
		d := (max - min) * 0.15
		if d == 0 {
			d = 0.5
		}
		return min - d, max + 3*d
	}
	xmin, xmax, ymin, ymax := plotter.XYRange(pts)
	p.X.Min, p.X.Max = pad(xmin, xmax)
	p.Y.Min, p.Y.Max = pad(ymin, ymax)
	p.Add(plotter.NewGrid())
	return render(p, 560, 380)
}

// curves draws each series as a line through its (X, Values) points over
// the unit square, with the diagonal dashed: an ROC curve beside chance.
func curves(c summary.Chart) ([]byte, error) {
	p := newPlot(c)
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	diag.Color = color.Gray{Y: 150}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(diag)
	p.Legend.Add("random", diag)
	drawn := 0
	for i, se := range c.Series {
		var xys plotter.XYs
		for k := range se.Values {
			if k < len(se.X) && finite(se.X[k]) && finite(se.Values[k]) {
				xys = append(xys, plotter.XY{X: float64(se.X[k]), Y: float64(se.Values[k])})
			}
		}
		if len(xys) < 2 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", c.Title, err)
		}
		l.Color = colour(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(se.Name, l)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("chart %q: no data", c.Title)
	}
	// Bottom right: below the diagonal, where a score worth having
	// draws nothing.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs = vg.Points(-10)
	p.Legend.YOffs = vg.Points(10)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Add(plotter.NewGrid())
	return render(p, 480, 420)
}

// grid is a heatmap's cells: column c, row r at (c, r).
type grid struct {
	cells    [][]summary.Num
	min, max float64
}

func (g grid) Dims() (int, int) {
	if len(g.cells) == 0 {
		return 0, 0
	}
	return len(g.cells[0]), len(g.cells)
}
func (g grid) Z(c, r int) float64 { return float64(g.cells[r][c]) }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }
func (g grid) Min() float64       { return g.min }
func (g grid) Max() float64       { return g.max }

func heatmap(c summary.Chart) ([]byte, error) {
	p := newPlot(c)
	if len(c.Rows) == 0 || len(c.Groups) == 0 {
		return nil, fmt.Errorf("chart %q: no data", c.Title)
	}
	g := grid{cells: c.Cells, min: math.Inf(1), max: math.Inf(-1)}
	var labels plotter.XYLabels
	for r, row := range c.Cells {
		if len(row) != len(c.Groups) {
			return nil, fmt.Errorf("chart %q: row %d has %d cells for %d columns", c.Title, r, len(row), len(c.Groups))
		}
		for col, v := range row {
			if finite(v) {
				g.min, g.max = math.Min(g.min, float64(v)), math.Max(g.max, float64(v))
				labels.XYs = append(labels.XYs, plotter.XY{X: float64(col), Y: float64(r)})
				labels.Labels = append(labels.Labels, fmt.Sprintf("%.2f", float64(v)))
			}
		}
	}
	if math.IsInf(g.min, 0) {
		return nil, fmt.Errorf("chart %q: no data", c.Title)
	}
	if g.max == g.min {
		g.min, g.max = g.min-0.5, g.max+0.5
	}
	pal := moreland.SmoothBlueRed()
	pal.SetMin(g.min)
	pal.SetMax(g.max)
	h := plotter.NewHeatMap(g, pal.Palette(64))
	h.NaN = color.RGBA{235, 235, 235, 255}
	p.Add(h)
	if len(labels.XYs) > 0 {
		lb, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font = font.From(sans, vg.Points(7))
			lb.TextStyle[i].XAlign = draw.XCenter
			lb.TextStyle[i].YAlign = draw.YCenter
		}
		p.Add(lb)
	}
	p.NominalX(c.Groups...)
	p.NominalY(c.Rows...)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.X.Min, p.X.Max = -0.5, float64(len(c.Groups))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(c.Rows))-0.5
	w := vg.Length(math.Min(1100, math.Max(420, float64(len(c.Groups))*34+200)))
	hgt := vg.Length(math.Max(220, float64(len(c.Rows))*30+200))
	return render(p, w, hgt)
}
