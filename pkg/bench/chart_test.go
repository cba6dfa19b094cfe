package bench

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

func TestChartsOfSampleScenarios(t *testing.T) {
	r := sampleReport()
	charts, err := Charts(r.Scenarios[0])
	if err != nil {
		t.Fatal(err)
	}
	var files, titles []string
	for _, c := range charts {
		files = append(files, c.File)
		titles = append(titles, c.Title)
		checkSVG(t, c.File, c.SVG)
	}
	if want := []string{"matrix-5-kb.svg", "matrix-25-kb.svg"}; !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	if want := "Consistent LIST by collection and object size: 5 KB"; titles[0] != want {
		t.Errorf("title %q, want %q", titles[0], want)
	}
	again, err := Charts(r.Scenarios[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := range charts {
		if !bytes.Equal(charts[i].SVG, again[i].SVG) {
			t.Errorf("%s differs from one rendering to the next", charts[i].File)
		}
	}
	if none, err := Charts(r.Scenarios[1]); err != nil || len(none) != 0 {
		t.Errorf("a scenario without groups has charts %v (error %v)", none, err)
	}
}

var circle = regexp.MustCompile(`<circle cx="(\d+)" cy="(\d+)"`)

// points returns the centers of the dots of an SVG chart, in drawing order.
func points(svg []byte) [][2]int {
	var ps [][2]int
	for _, m := range circle.FindAllSubmatch(svg, -1) {
		x, _ := strconv.Atoi(string(m[1]))
		y, _ := strconv.Atoi(string(m[2]))
		ps = append(ps, [2]int{x, y})
	}
	return ps
}

func TestChartLogAxes(t *testing.T) {
	charts, err := Charts(sampleReport().Scenarios[0])
	if err != nil {
		t.Fatal(err)
	}
	// Four lines of 5 points for 5 KB; of 4 for 25 KB, whose largest case was skipped.
	for i, want := range []int{20, 16} {
		if got := len(points(charts[i].SVG)); got != want {
			t.Errorf("%s has %d points, want %d", charts[i].File, got, want)
		}
	}
	// The cache's p50 at 1, 10, 100, 1,000 and 10,000 objects: X grows tenfold
	// and the latency (from 0.1 ms) √10-fold, evenly spaced on log axes.
	ps := points(charts[0].SVG)[:5]
	dx, dy := ps[1][0]-ps[0][0], ps[1][1]-ps[0][1]
	if dx <= 0 || dy >= 0 {
		t.Fatalf("the first points %v do not go right and up", ps)
	}
	for i := 2; i < len(ps); i++ {
		gx, gy := ps[i][0]-ps[i-1][0], ps[i][1]-ps[i-1][1]
		if abs(gx-dx) > 1 || abs(gy-dy) > 1 {
			t.Errorf("points %v are not evenly spaced", ps)
		}
	}
	for _, label := range []string{">1<", ">10<", ">100<", ">1,000<", ">10,000<", ">0.1<"} {
		if !bytes.Contains(charts[0].SVG, []byte(label)) {
			t.Errorf("%s has no tick label %s", charts[0].File, label)
		}
	}
}

func abs(i int) int { return max(i, -i) }

func TestChartStyles(t *testing.T) {
	charts, err := Charts(sampleReport().Scenarios[0])
	if err != nil {
		t.Fatal(err)
	}
	svg := string(charts[0].SVG)
	for _, want := range []string{cacheColor.String(), etcdColor.String()} {
		if !regexp.MustCompile(`stroke-dasharray="6, 4" d="[^"]*" style="stroke-width:2;stroke:` + regexp.QuoteMeta(want)).MatchString(svg) {
			t.Errorf("no dashed line in %s", want)
		}
		if !regexp.MustCompile(`<path d="[^"]*" style="stroke-width:2;stroke:` + regexp.QuoteMeta(want)).MatchString(svg) {
			t.Errorf("no solid line in %s", want)
		}
	}
}

func TestChartGroupsWithoutPoints(t *testing.T) {
	s := Scenario{ID: "Odd ID/1", Title: "T", Rows: []Row{
		{Label: "a", Group: "25 KB", X: 1, Metrics: listMetrics(1, 25000)},
		{Label: "b", Group: "25 kb", X: 10, Metrics: listMetrics(10, 25000)},
		{Label: "c", Group: "none", X: 10, Skipped: "no reason"},
		{Label: "d", Group: "zero", X: 0, Metrics: listMetrics(1, 25000)},
		{Label: "e", Group: "µ", X: 100, Metrics: listMetrics(1, 25000)},
	}}
	charts, err := Charts(s)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, c := range charts {
		files = append(files, c.File)
	}
	// A single point still gets a chart; skipped rows and X = 0 do not.
	if want := []string{"odd-id-1-25-kb.svg", "odd-id-1-25-kb-2.svg", "odd-id-1-chart.svg"}; !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	md := (&Report{Scenarios: []Scenario{s}}).Markdown()
	for _, f := range files {
		if !bytes.Contains([]byte(md), []byte("]("+f+")")) {
			t.Errorf("the Markdown does not link %s:\n%s", f, md)
		}
	}
	if bytes.Contains([]byte(md), []byte(": none]")) || bytes.Contains([]byte(md), []byte(": zero]")) {
		t.Errorf("the Markdown links a chart without points:\n%s", md)
	}
}

func TestMetricCharts(t *testing.T) {
	charts, err := Charts(curveScenario())
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, c := range charts {
		files = append(files, c.File)
	}
	if want := []string{"curves-start-to-ready.svg", "curves-heap-per-pod.svg"}; !slices.Equal(files, want) {
		t.Fatalf("files %q, want %q", files, want)
	}
	for _, want := range []string{"pods in the cache", "start to ready (ms)", ">1,000,000<", ">10,000<", "cache"} {
		if !bytes.Contains(charts[0].SVG, []byte(want)) {
			t.Errorf("%s does not contain %q", charts[0].File, want)
		}
	}
	if !bytes.Contains(charts[1].SVG, []byte("heap per pod (bytes)")) {
		t.Errorf("%s does not name its unit", charts[1].File)
	}
	// One line of three points, growing tenfold per tenfold: evenly spaced
	// on log-log axes.
	ps := points(charts[0].SVG)
	if len(ps) != 3 {
		t.Fatalf("%d points, want 3", len(ps))
	}
	if dx, dy := ps[1][0]-ps[0][0], ps[1][1]-ps[0][1]; dx <= 0 || dy >= 0 || abs((ps[2][0]-ps[1][0])-dx) > 1 || abs((ps[2][1]-ps[1][1])-dy) > 1 {
		t.Errorf("points %v are not evenly spaced, right and up", ps)
	}
	s := curveScenario()
	s.Charts = []string{"no such metric"}
	if none, err := Charts(s); err != nil || len(none) != 0 {
		t.Errorf("a chart of a metric no row has: %v (%v)", none, err)
	}
}
