package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		unit Unit
		v    float64
		want string
	}{
		{Seconds, 0.00019, "0.190 ms"},
		{Seconds, 0.000028, "28.0 µs"},
		{Seconds, 2.4, "2.40 s"},
		{Seconds, 0.0125, "12.5 ms"},
		{Seconds, 0.25, "250 ms"},
		{Seconds, 0.99999, "1.00 s"},       // rounds up into the next unit
		{Seconds, 0.000099996, "0.100 ms"}, // likewise
		{Seconds, 0.0000999, "99.9 µs"},
		{Seconds, 4.2e-7, "420 ns"},
		{Seconds, 1234, "1,234 s"},
		{Seconds, 0, "0 s"},
		{PerSecond, 24451.4, "24,451/s"},
		{PerSecond, 0.3, "0.30/s"},
		{PerSecond, 9.5, "9.50/s"},
		{PerSecond, 1234567, "1,234,567/s"},
		{Bytes, 2727, "2,727 B"},
		{Bytes, 512, "512 B"},
		{Bytes, 25000, "25.0 KB"},
		{Bytes, 1190000, "1.19 MB"},
		{Bytes, 999999, "1.00 MB"},
		{Bytes, 3.5e9, "3.50 GB"},
		{CPUSeconds, 0.012, "12.0 ms CPU"},
		{CPUSeconds, 0.00004, "40.0 µs CPU"},
		{CPUSeconds, 3.14159, "3.14 s CPU"},
		{Bytes, 0, "0 B"},
		{Count, 1000, "1,000"},
		{Count, 7, "7"},
		{Count, 2.5, "2.50"},
		{Count, -12345, "-12,345"},
		{Seconds, math.NaN(), "–"},
		{Bytes, math.Inf(1), "–"},
		{Unit("widgets"), 1.5, "1.50 widgets"},
	} {
		if got := FormatValue(c.unit, c.v); got != c.want {
			t.Errorf("FormatValue(%q, %v) = %q, want %q", c.unit, c.v, got, c.want)
		}
	}
}

func TestFormatAdvantage(t *testing.T) {
	for _, c := range []struct {
		a    float64
		want string
	}{
		{123.4, "123×"},
		{1.94, "1.9×"},
		{0.951, "0.95×"},
		{12.6, "13×"},
		{9.96, "10×"},
		{1234.6, "1,235×"},
		{0.0123, "0.012×"},
		{0, "–"},
		{math.Inf(1), "–"},
	} {
		if got := FormatAdvantage(c.a); got != c.want {
			t.Errorf("FormatAdvantage(%v) = %q, want %q", c.a, got, c.want)
		}
	}
}

// sampleReport is a report with a charted scenario (collection size ×
// object size, the largest case of "25 KB" skipped) and one without charts
// (with an incomplete case).
func sampleReport() *Report {
	matrix := Scenario{
		ID:       "matrix",
		Title:    "Consistent LIST by collection and object size",
		Workload: "One client lists the whole collection, 200 times per case.",
	}
	for _, size := range []struct {
		label string
		bytes float64
	}{{"5 KB", 5000}, {"25 KB", 25000}} {
		for _, n := range []float64{1, 10, 100, 1000, 10000} {
			row := Row{Label: FormatValue(Count, n) + " × " + size.label, Group: size.label, X: n}
			if n == 10000 && size.label == "25 KB" {
				row.Skipped = "the list would exceed etcd's 250 MB response limit"
			} else {
				row.Metrics = listMetrics(n, size.bytes)
			}
			matrix.Rows = append(matrix.Rows, row)
		}
	}
	watch := Scenario{
		ID:       "watch",
		Title:    "Watch fan-out",
		Workload: "Watchers receive 1,000 updates of one ConfigMap.",
		Rows: []Row{
			{Label: "16 watchers", Metrics: watchMetrics(16)},
			{Label: "1,024 watchers", Metrics: watchMetrics(1024), Incomplete: "3 watchers missed the last event"},
		},
	}
	return &Report{
		Command: "go run ./cmd/bench --out docs/bench",
		Machine: Machine{CPU: "Test CPU @ 3.0GHz", Cores: 8, MemoryBytes: 16 << 30, OS: "linux 6.1.0", Go: "go1.26.8", Etcd: "3.7.3"},
		Started: time.Date(2026, 8, 3, 14, 5, 0, 0, time.UTC),
		Elapsed: 12*time.Minute + 34*time.Second + 400*time.Millisecond,
		Setup: []string{
			"Both servers run with --etcd-compaction-interval=0.",
			"Objects are ConfigMaps with one data key.",
		},
		Scenarios: []Scenario{matrix, watch},
	}
}

// listMetrics makes up the metrics of listing n objects of that size: the
// latencies grow as √n, so that they are evenly spaced on log axes.
func listMetrics(n, size float64) []Metric {
	p50 := 1e-4 * math.Sqrt(n) * size / 5000
	return []Metric{
		{Name: "p50", Unit: Seconds, Cache: p50, Etcd: 40 * p50},
		{Name: "p99", Unit: Seconds, Cache: 3 * p50, Etcd: 100 * p50},
		{Name: "throughput", Unit: PerSecond, Cache: 1 / p50, Etcd: 1 / (40 * p50), HigherIsBetter: true},
		{Name: "response", Unit: Bytes, Cache: n * size, Etcd: n * size},
	}
}

// watchMetrics makes up the metrics of a watch fan-out.
func watchMetrics(watchers float64) []Metric {
	return []Metric{
		{Name: "events delivered", Unit: PerSecond, Cache: 5000 * watchers, Etcd: 900 * watchers, HigherIsBetter: true},
		{Name: "server CPU per event", Unit: CPUSeconds, Cache: 0.00004, Etcd: 0.0003},
		{Name: "events", Unit: Count, Cache: 1000 * watchers, Etcd: 1000 * watchers},
	}
}

// formattedCells returns every label and formatted value of a scenario.
func formattedCells(s Scenario) []string {
	var cells []string
	for _, r := range s.Rows {
		cells = append(cells, r.Label)
		for _, m := range r.Metrics {
			cells = append(cells, m.Name, FormatValue(m.Unit, m.Cache), FormatValue(m.Unit, m.Etcd), FormatAdvantage(m.Advantage()))
		}
	}
	return cells
}

func TestRenderScenarioText(t *testing.T) {
	for _, s := range sampleReport().Scenarios {
		var buf bytes.Buffer
		if err := WriteScenarioText(&buf, s); err != nil {
			t.Fatal(err)
		}
		text := buf.String()
		lines := strings.Split(text, "\n")
		if lines[0] != s.Title || lines[1] != strings.Repeat("=", len(s.Title)) || lines[2] != s.Workload {
			t.Errorf("%s: heading is\n%s", s.ID, strings.Join(lines[:3], "\n"))
		}
		for _, c := range formattedCells(s) {
			if !strings.Contains(text, c) {
				t.Errorf("%s: the text does not contain %q:\n%s", s.ID, c, text)
			}
		}
		checkColumnsAligned(t, lines[4:])
	}
	var buf bytes.Buffer
	if err := WriteScenarioText(&buf, sampleReport().Scenarios[0]); err != nil {
		t.Fatal(err)
	}
	want := "10,000 × 25 KB  skipped: the list would exceed etcd's 250 MB response limit\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("no line %q in\n%s", want, buf.String())
	}
}

// checkColumnsAligned checks that every line of a text table with as many
// cells as the header starts its cells where the header's start.
func checkColumnsAligned(t *testing.T, table []string) {
	t.Helper()
	header := []rune(table[0])
	var starts []int
	for i, r := range header {
		if r != ' ' && (i == 0 || header[i-1] == ' ' && header[i-2] == ' ') {
			starts = append(starts, i)
		}
	}
	if len(starts) != len(tableColumns(Scenario{})) {
		t.Fatalf("header %q has columns at %v", table[0], starts)
	}
	metricLines := 0
	for _, l := range table[1:] {
		if len(strings.Fields(l)) < 4 || strings.Contains(l, ": ") {
			continue // a note, a blank line, or a case's label only
		}
		metricLines++
		runes := []rune(l)
		for _, at := range starts[1:] {
			if at >= len(runes) || runes[at] == ' ' || runes[at-1] != ' ' {
				t.Errorf("line %q has no cell starting at column %d, as in the header %q", l, at, table[0])
			}
		}
	}
	if metricLines == 0 {
		t.Errorf("no metric lines in %q", table)
	}
}

func TestRenderMarkdown(t *testing.T) {
	r := sampleReport()
	md := r.Markdown()
	for _, want := range []string{
		"# watchcache benchmark: the watch cache against etcd\n",
		"```sh\ngo run ./cmd/bench --out docs/bench\n```\n",
		"Test CPU @ 3.0GHz (8 logical CPUs, 16.0 GiB of memory), linux 6.1.0, Go go1.26.8, etcd 3.7.3",
		"2026-08-03 14:05:00 UTC", "12m34s",
		"- Both servers run with --etcd-compaction-interval=0.\n- Objects are ConfigMaps with one data key.\n",
		"`--watch-cache=false`", "etcd/cache for latencies", "cache/etcd for throughputs",
		"## Consistent LIST by collection and object size\n\nOne client lists the whole collection, 200 times per case.\n",
		"| case | metric | cache | etcd | cache advantage |\n",
		"| 10,000 × 25 KB | *skipped: the list would exceed etcd's 250 MB response limit* |  |  |  |\n",
		"|  | *incomplete: 3 watchers missed the last event* |  |  |  |\n",
		"| 1,000 × 5 KB | p50 | 3.16 ms | 126 ms | 40× |\n",
		"|  | throughput | 316/s | 7.91/s | 40× |\n",
		"![Consistent LIST by collection and object size: 25 KB](matrix-25-kb.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown does not contain %q:\n%s", want, md)
		}
	}
	watch := md[strings.Index(md, "## Watch fan-out"):]
	if strings.Contains(watch, "![") {
		t.Errorf("a scenario without groups links charts:\n%s", watch)
	}
}

func TestRenderMarkdownEscapesCells(t *testing.T) {
	r := &Report{Command: "echo ```", Scenarios: []Scenario{{
		ID: "s", Title: "T", Rows: []Row{{Label: "a|b", Skipped: "x\ny"}},
	}}}
	md := r.Markdown()
	for _, want := range []string{"````sh\necho ```\n````\n", `| a\|b | *skipped: x y* |`} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown does not contain %q:\n%s", want, md)
		}
	}
}

func TestWriteOut(t *testing.T) {
	r := sampleReport()
	dir := filepath.Join(t.TempDir(), "docs", "bench")
	if err := WriteOut(dir, r); err != nil {
		t.Fatal(err)
	}

	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, r) {
		t.Errorf("results.json reads back as\n%+v\nwant\n%+v", got, *r)
	}

	md, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(md) != r.Markdown() {
		t.Error("README.md is not the report's Markdown")
	}
	for _, s := range r.Scenarios {
		for _, c := range formattedCells(s) {
			if !strings.Contains(string(md), c) {
				t.Errorf("README.md does not contain %q", c)
			}
		}
	}

	var links []string
	for _, m := range regexp.MustCompile(`!\[[^\]]*\]\(([^)]*)\)`).FindAllStringSubmatch(string(md), -1) {
		links = append(links, m[1])
	}
	if want := []string{"matrix-5-kb.svg", "matrix-25-kb.svg"}; !slices.Equal(links, want) {
		t.Errorf("README.md links %q, want %q", links, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if want := []string{"README.md", "matrix-25-kb.svg", "matrix-5-kb.svg", "results.json"}; !slices.Equal(files, want) {
		t.Errorf("%s holds %q, want %q", dir, files, want)
	}
	for _, l := range links {
		svg, err := os.ReadFile(filepath.Join(dir, l))
		if err != nil {
			t.Fatal(err)
		}
		checkSVG(t, l, svg)
	}
}

// checkSVG checks that svg is well-formed XML that shows the series' names
// and the axes' names.
func checkSVG(t *testing.T, name string, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", name, err)
		}
	}
	for _, want := range []string{"<svg", "cache p50", "cache p99", "etcd p50", "etcd p99", "objects in the list", "latency (ms)"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("%s does not contain %q", name, want)
		}
	}
}

// sloScenario is a scenario measured against objectives: a second side
// named "SLO", a ratio column named "margin", and a metric of the first
// side only.
func sloScenario() Scenario {
	return Scenario{ID: "nodes", Title: "SLIs", Workload: "A cluster.", Sides: []string{"measured", "SLO"}, Ratio: "margin", Rows: []Row{
		{Label: "mutating, p99", Metrics: []Metric{{Name: "pod create", Unit: Seconds, Cache: 0.004, Etcd: 1}}},
		{Label: "server", Metrics: []Metric{{Name: "server CPU", Unit: Cores, Cache: 0.85, FirstOnly: true}}},
	}}
}

// curveScenario is a one-sided scenario whose metrics are charted each
// against X.
func curveScenario() Scenario {
	s := Scenario{ID: "curves", Title: "Curves", Workload: "Sizes.", Sides: []string{"cache"}, XAxis: "pods in the cache",
		Charts: []string{"start to ready", "heap per pod"}}
	for _, n := range []float64{1e4, 1e5, 1e6} {
		s.Rows = append(s.Rows, Row{Label: FormatValue(Count, n) + " pods", X: n, Metrics: []Metric{
			{Name: "start to ready", Unit: Seconds, Cache: n * 1e-5},
			{Name: "heap per pod", Unit: Bytes, Cache: 2800},
		}})
	}
	return s
}

func TestRenderObjectivesAndOneSide(t *testing.T) {
	r := &Report{Scenarios: []Scenario{sloScenario(), curveScenario()}}
	md := r.Markdown()
	for _, want := range []string{
		"| case | metric | measured | SLO | margin |\n|---|---|--:|--:|--:|\n",
		"| mutating, p99 | pod create | 4.00 ms | 1.00 s | 250× |\n",
		"| server | server CPU | 0.850 cores | – | – |\n",
		"| case | metric | cache |\n|---|---|--:|\n",
		"| 10,000 pods | start to ready | 100 ms |\n",
		"![Curves: heap per pod](curves-heap-per-pod.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown does not contain %q:\n%s", want, md)
		}
	}
	var buf bytes.Buffer
	if err := WriteScenarioText(&buf, sloScenario()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	checkColumnsAligned(t, lines[4:])
	if !strings.Contains(lines[4], "margin") {
		t.Errorf("header %q", lines[4])
	}
	buf.Reset()
	if err := WriteScenarioText(&buf, curveScenario()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "1,000,000 pods  start to ready  10.0 s\n") || strings.Contains(buf.String(), "advantage") {
		t.Errorf("one-sided text:\n%s", buf.String())
	}
	if m := sloScenario().Rows[1].Metrics[0]; m.Advantage() != 0 {
		t.Errorf("a first-side-only metric has an advantage %v", m.Advantage())
	}
}
