// The SVG charts of a scenario: a chart per group of rows or per charted
// metric, logarithmic axes, legend, ticks and grid, and their file names.

package bench

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"
)

// Chart is one SVG chart of a scenario: the latency of its rows in one Group
// against their X, for both servers; or, for a scenario that names Charts,
// one of those metrics against the rows' X.
type Chart struct {
	// File is the chart's file name, "<scenario ID>-<group>.svg", reduced to
	// lower-case letters, digits and dashes so that it is safe as a path and
	// as a relative Markdown link.
	File string
	// Title is "<scenario title>: <group>".
	Title string
	// SVG is the rendered chart.
	SVG []byte
}

// The names of the lines each chart draws, in legend order.
const (
	seriesCacheP50 = "cache p50"
	seriesCacheP99 = "cache p99"
	seriesEtcdP50  = "etcd p50"
	seriesEtcdP99  = "etcd p99"
)

var (
	cacheColor = drawing.ColorFromHex("1f77b4") // blue
	etcdColor  = drawing.ColorFromHex("d62728") // red
	gridColor  = drawing.ColorFromHex("e0e0e0")
	p99Dashes  = []float64{6, 4}
)

// chartPlan is what a chart will show, computed without drawing it, so that
// the Markdown page links exactly the charts that Charts draws.
type chartPlan struct {
	file, title  string
	xName, yName string
	series       []line
}

// line is one series of a chart: the X values of its points and their Y
// values (latencies in milliseconds, or see axisScale), ordered by X.
type line struct {
	name   string
	xs, ys []float64
}

// Charts draws one chart per distinct Group among the scenario's rows, in the
// order the groups first appear: X on a logarithmic axis against the p50 and
// p99 latencies (the metrics named "p50" and "p99", in Seconds) of both
// servers, in milliseconds on a logarithmic axis. Skipped rows and values
// that a logarithmic axis cannot show (zero or negative) contribute no
// point; a group with no point at all gets no chart. A scenario that names
// Charts gets instead a chart per named metric, in that order: the metric of
// every side against X, both axes logarithmic (see axisScale). The same
// scenario always gives the same bytes.
func Charts(s Scenario) ([]Chart, error) {
	var charts []Chart
	for _, p := range planCharts(s) {
		svg, err := p.render()
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", p.file, err)
		}
		charts = append(charts, Chart{File: p.file, Title: p.title, SVG: svg})
	}
	return charts, nil
}

// planCharts returns the charts of s that have at least one point.
func planCharts(s Scenario) []chartPlan {
	if len(s.Charts) > 0 {
		return metricCharts(s)
	}
	var plans []chartPlan
	used := map[string]bool{}
	for _, group := range groups(s.Rows) {
		p := chartPlan{
			file:   uniqueName(used, fileStem(s.ID)+"-"+fileStem(group)),
			title:  s.Title + ": " + group,
			xName:  xAxisName(s),
			yName:  "latency (ms)",
			series: groupLines(s.Rows, group),
		}
		if p.points() > 0 {
			plans = append(plans, p)
		}
	}
	return plans
}

// xAxisName is the name of the X axis of a scenario's charts.
func xAxisName(s Scenario) string {
	if s.XAxis != "" {
		return s.XAxis
	}
	return "objects in the list"
}

// metricCharts plans a chart per metric named in s.Charts: the metric of
// every row with a positive X, one line per side measured.
func metricCharts(s Scenario) []chartPlan {
	var plans []chartPlan
	used := map[string]bool{}
	first, second := s.sideNames()
	for _, name := range s.Charts {
		lines := []line{{name: first}, {name: second}}
		var unit Unit
		for _, r := range sortedByX(s.Rows, func(r Row) bool { return r.X > 0 }) {
			for _, m := range r.Metrics {
				if m.Name != name {
					continue
				}
				unit = m.Unit
				scale, _ := axisScale(unit)
				lines[0].add(r.X, m.Cache*scale)
				if !s.oneSided() && !m.FirstOnly {
					lines[1].add(r.X, m.Etcd*scale)
				}
			}
		}
		if len(lines[1].xs) == 0 {
			lines = lines[:1]
		}
		_, yName := axisScale(unit)
		p := chartPlan{file: uniqueName(used, fileStem(s.ID)+"-"+fileStem(name)), title: s.Title + ": " + name,
			xName: xAxisName(s), yName: name + yName, series: lines}
		if p.points() > 0 {
			plans = append(plans, p)
		}
	}
	return plans
}

// axisScale is what a metric's values in unit are multiplied by on a
// chart's Y axis, and the unit the axis names: latencies in milliseconds.
func axisScale(u Unit) (float64, string) {
	switch u {
	case Seconds:
		return 1000, " (ms)"
	case CPUSeconds:
		return 1000, " (CPU ms)"
	case Bytes:
		return 1, " (bytes)"
	case Count:
		return 1, ""
	}
	return 1, " (" + string(u) + ")"
}

// sortedByX returns the rows that keep says to, ordered by X (stable).
func sortedByX(rows []Row, keep func(Row) bool) []Row {
	var members []Row
	for _, r := range rows {
		if keep(r) {
			members = append(members, r)
		}
	}
	slices.SortStableFunc(members, func(a, b Row) int { return cmp.Compare(a.X, b.X) })
	return members
}

// groups returns the distinct non-empty groups of rows in order of first
// appearance.
func groups(rows []Row) []string {
	var gs []string
	for _, r := range rows {
		if r.Group != "" && !slices.Contains(gs, r.Group) {
			gs = append(gs, r.Group)
		}
	}
	return gs
}

// fileStem reduces s to lower-case ASCII letters and digits, with every other
// run of characters replaced by one dash.
func fileStem(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	if b.Len() == 0 {
		return "chart"
	}
	return b.String()
}

// uniqueName returns stem + ".svg", or stem-2.svg, stem-3.svg... if that
// name is in used, and records the name returned.
func uniqueName(used map[string]bool, stem string) string {
	name := stem + ".svg"
	for i := 2; used[name]; i++ {
		name = stem + "-" + strconv.Itoa(i) + ".svg"
	}
	used[name] = true
	return name
}

// groupLines returns the four lines of a group's chart.
func groupLines(rows []Row, group string) []line {
	lines := []line{{name: seriesCacheP50}, {name: seriesCacheP99}, {name: seriesEtcdP50}, {name: seriesEtcdP99}}
	members := sortedByX(rows, func(r Row) bool { return r.Group == group && r.Skipped == "" && r.X > 0 })
	for _, r := range members {
		for i, q := range []string{"p50", "p99"} {
			m, ok := latency(r, q)
			if !ok {
				continue
			}
			lines[i].add(r.X, m.Cache*1000)
			lines[2+i].add(r.X, m.Etcd*1000)
		}
	}
	return lines
}

// latency returns the row's metric of that name if it is a duration.
func latency(r Row, name string) (Metric, bool) {
	for _, m := range r.Metrics {
		if m.Name == name && m.Unit == Seconds {
			return m, true
		}
	}
	return Metric{}, false
}

// add appends the point (x, y) if y can be placed on a logarithmic axis.
func (l *line) add(x, y float64) {
	if y > 0 {
		l.xs = append(l.xs, x)
		l.ys = append(l.ys, y)
	}
}

// points counts the points of all the plan's lines.
func (p chartPlan) points() int {
	n := 0
	for _, l := range p.series {
		n += len(l.xs)
	}
	return n
}

// render draws the plan as SVG. Both axes are logarithmic: the series are
// drawn on linear axes in log10 units, with ticks and grid lines at every
// power of ten labelled with the plain value. (chartdraw's LogarithmicRange
// is not used: it puts every value below 1 at the axis' origin, and
// latencies are often below a millisecond.)
func (p chartPlan) render() ([]byte, error) {
	var xs, ys []float64
	for _, l := range p.series {
		xs = append(xs, l.xs...)
		ys = append(ys, l.ys...)
	}
	xTicks, yTicks := decadeTicks(xs), decadeTicks(ys)
	c := chartdraw.Chart{
		Title:      p.title,
		TitleStyle: chartdraw.Style{FontStyle: chartdraw.FontStyle{FontSize: 14}},
		Width:      900,
		Height:     500,
		Background: chartdraw.Style{Padding: chartdraw.Box{Top: 80, Left: 20, Right: 30, Bottom: 20, IsSet: true}},
		XAxis: chartdraw.XAxis{
			Name:      p.xName,
			Ticks:     xTicks,
			GridLines: gridLines(xTicks),
		},
		YAxis: chartdraw.YAxis{
			Name:      p.yName,
			AxisType:  chartdraw.YAxisSecondary, // on the left
			Ticks:     yTicks,
			GridLines: gridLines(yTicks),
		},
		YAxisSecondary: chartdraw.HideYAxis(),
	}
	series := make([]chartdraw.ContinuousSeries, len(p.series))
	for i, l := range p.series {
		series[i] = l.series()
		c.Series = append(c.Series, series[i])
	}
	c.Elements = []chartdraw.Renderable{legend(series)}
	var buf bytes.Buffer
	if err := c.Render(chartdraw.SVG, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// series returns the line as a chartdraw series in log10 units, styled by
// server (color) and percentile (p99 dashed).
func (l line) series() chartdraw.ContinuousSeries {
	color := cacheColor
	if strings.HasPrefix(l.name, "etcd") {
		color = etcdColor
	}
	style := chartdraw.Style{StrokeColor: color, StrokeWidth: 2, DotColor: color, DotWidth: 3}
	if strings.HasSuffix(l.name, "p99") {
		style.StrokeDashArray = p99Dashes
	}
	return chartdraw.ContinuousSeries{Name: l.name, Style: style, XValues: log10s(l.xs), YValues: log10s(l.ys)}
}

// legendSpacing is how far apart the legend's entries are, in pixels: more
// than their names need, because a viewer draws SVG text in whatever font it
// has, often wider than the one chartdraw measured with.
const legendSpacing = 140

// legend draws, in the band between the title and the plot, a sample of each
// series' line followed by its name.
func legend(series []chartdraw.ContinuousSeries) chartdraw.Renderable {
	return func(r chartdraw.Renderer, plot chartdraw.Box, defaults chartdraw.Style) {
		y := plot.Top - 25
		for i, s := range series {
			x := plot.Left + i*legendSpacing
			r.SetStrokeColor(s.Style.StrokeColor)
			r.SetStrokeWidth(s.Style.StrokeWidth)
			r.SetStrokeDashArray(s.Style.StrokeDashArray)
			r.MoveTo(x, y)
			r.LineTo(x+30, y)
			r.Stroke()
			r.SetFont(defaults.Font)
			r.SetFontSize(chartdraw.DefaultFontSize)
			r.SetFontColor(chartdraw.DefaultTextColor)
			r.Text(s.Name, x+36, y+5)
		}
	}
}

// log10s returns the base-10 logarithms of vs.
func log10s(vs []float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = math.Log10(v)
	}
	return out
}

// decadeTicks returns ticks, in log10 units, at every power of ten from the
// one at or below the smallest of vs to the one at or above the largest,
// spanning at least one decade. vs must not be empty and must be positive.
func decadeTicks(vs []float64) []chartdraw.Tick {
	lo := int(math.Floor(math.Log10(slices.Min(vs))))
	hi := max(int(math.Ceil(math.Log10(slices.Max(vs)))), lo+1)
	var ticks []chartdraw.Tick
	for e := lo; e <= hi; e++ {
		ticks = append(ticks, chartdraw.Tick{Value: float64(e), Label: decadeLabel(e)})
	}
	return ticks
}

// decadeLabel writes 10^e in plain notation: 0.01, 1, 1,000.
func decadeLabel(e int) string {
	if e < 0 {
		return strconv.FormatFloat(math.Pow10(e), 'f', -e, 64)
	}
	return groupThousands("1" + strings.Repeat("0", e))
}

// gridLines returns a light grid line at every tick between the first and
// the last, which the axes already draw.
func gridLines(ticks []chartdraw.Tick) []chartdraw.GridLine {
	style := chartdraw.Style{StrokeColor: gridColor, StrokeWidth: 1}
	var lines []chartdraw.GridLine
	for _, t := range ticks[1 : len(ticks)-1] {
		lines = append(lines, chartdraw.GridLine{Value: t.Value, Style: style})
	}
	return lines
}
