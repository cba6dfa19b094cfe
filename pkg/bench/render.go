// Rendering results: values in their units, advantages, a scenario's table
// for a terminal, and the Markdown page with its charts written to a directory.

package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// noValue stands for a value that is not defined, such as the advantage of a
// metric one server measured as zero.
const noValue = "–"

// FormatValue writes v, expressed in u, for people:
//
//   - Seconds with 3 significant digits in s, ms (from 0.1 ms), µs (from
//     1 µs) or ns: "2.40 s", "0.190 ms", "28.0 µs";
//   - PerSecond as a whole number with thousands separators, or with 2
//     decimals below 10: "24,451/s", "0.30/s";
//   - Bytes as a whole number below 10,000 B, else with 3 significant digits
//     in decimal units, 1 KB = 1000 B and 1 MB = 1000 KB: "2,727 B",
//     "25.0 KB", "1.19 MB";
//   - CPUSeconds like Seconds, followed by "CPU": "40.0 µs CPU", "1.20 s CPU";
//   - Count as a whole number with thousands separators ("1,000"), or with 3
//     significant digits when it is not whole.
//
// A value that is not a number or infinite is written "–", and a value in
// an unknown unit with 3 significant digits followed by the unit.
func FormatValue(u Unit, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return noValue
	}
	switch u {
	case Seconds:
		return scaled(v, secondScales)
	case PerSecond:
		return perSecond(v) + "/s"
	case Bytes:
		if math.Abs(v) < 9999.5 {
			return whole(v) + " B"
		}
		return scaled(v, byteScales)
	case CPUSeconds:
		return scaled(v, secondScales) + " CPU"
	case Count:
		if v == math.Trunc(v) {
			return whole(v)
		}
		return significant(v, 3)
	}
	return significant(v, 3) + " " + string(u)
}

// FormatAdvantage writes an advantage (see Metric.Advantage) with 2
// significant digits, never rounding its whole part: "123×", "1.9×",
// "0.95×"; an undefined advantage (0) is written "–".
func FormatAdvantage(a float64) string {
	switch {
	case a == 0 || math.IsNaN(a) || math.IsInf(a, 0):
		return noValue
	case a >= 10:
		return whole(a) + "×"
	}
	return significant(a, 2) + "×"
}

// scale is a unit of a scaled quantity: how many base units it is worth,
// and from which (rounded) value it is used.
type scale struct {
	factor, from float64
	name         string
}

// The scales of Seconds and Bytes, largest first. Milliseconds start at
// 0.1 ms so that e.g. 0.19 ms stays in milliseconds.
var (
	secondScales = []scale{{1, 1, "s"}, {1e-3, 1e-4, "ms"}, {1e-6, 1e-6, "µs"}, {1e-9, 0, "ns"}}
	byteScales   = []scale{{1e12, 1e12, "TB"}, {1e9, 1e9, "GB"}, {1e6, 1e6, "MB"}, {1e3, 0, "KB"}}
)

// scaled writes v with 3 significant digits in the first of scales whose
// from is at most v once rounded, or else in the last one; 0 is written in
// the first.
func scaled(v float64, scales []scale) string {
	r := math.Abs(roundSignificant(v, 3))
	s := scales[len(scales)-1]
	for _, c := range scales {
		if r >= c.from || r == 0 {
			s = c
			break
		}
	}
	return significant(v/s.factor, 3) + " " + s.name
}

// perSecond writes a rate: whole from 10, with 2 decimals below.
func perSecond(v float64) string {
	if math.Abs(v) >= 10 {
		return whole(v)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// roundSignificant rounds v to n significant digits.
func roundSignificant(v float64, n int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'e', n-1, 64), 64)
	return r
}

// significant writes v with n significant digits in plain decimal notation
// (trailing zeros kept, so that every value shows its precision), with
// thousands separators: significant(0.19, 3) = "0.190",
// significant(12345, 3) = "12,345".
func significant(v float64, n int) string {
	if v == 0 {
		return "0"
	}
	e := strconv.FormatFloat(v, 'e', n-1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	return groupThousands(strconv.FormatFloat(v, 'f', max(0, n-1-exp), 64))
}

// whole writes v rounded to a whole number, with thousands separators.
func whole(v float64) string {
	return groupThousands(strconv.FormatFloat(v, 'f', 0, 64))
}

// groupThousands puts a comma between every three digits of the whole part
// of a decimal number such as "-12345.6".
func groupThousands(s string) string {
	sign, digits := "", s
	if strings.HasPrefix(s, "-") {
		sign, digits = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(digits, ".")
	var b strings.Builder
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if frac != "" {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// tableColumns are the columns of a scenario's table, in the terminal and
// in Markdown.
func tableColumns(s Scenario) []string {
	first, second := s.sideNames()
	if s.oneSided() {
		return []string{"case", "metric", first}
	}
	ratio := first + " advantage"
	if s.Ratio != "" {
		ratio = s.Ratio
	}
	return []string{"case", "metric", first, second, ratio}
}

// tableLine is one line of a scenario's table: either a metric's cells, or
// a note (why a row was skipped or what did not complete) after the case.
type tableLine struct {
	label string
	cells []string // metric, cache, etcd, cache advantage (metric, value if one-sided)
	note  string
}

// tableLines lays out a scenario's table.
func tableLines(s Scenario) []tableLine {
	var lines []tableLine
	for _, r := range s.Rows {
		lines = append(lines, rowLines(r, s.oneSided())...)
	}
	return lines
}

// rowLines lays out a case: a line per metric, or why it was skipped, then
// what did not complete; its label is only on its first line. Without a
// second side, a metric's line has only its value.
func rowLines(r Row, oneSided bool) []tableLine {
	if r.Skipped != "" {
		return []tableLine{{label: r.Label, note: "skipped: " + r.Skipped}}
	}
	var lines []tableLine
	for _, m := range r.Metrics {
		cells := []string{m.Name, FormatValue(m.Unit, m.Cache), FormatValue(m.Unit, m.Etcd), FormatAdvantage(m.Advantage())}
		switch {
		case oneSided:
			cells = cells[:2]
		case m.FirstOnly:
			cells[2] = noValue
		}
		lines = append(lines, tableLine{cells: cells})
	}
	if r.Incomplete != "" {
		lines = append(lines, tableLine{note: "incomplete: " + r.Incomplete})
	}
	if len(lines) == 0 {
		lines = append(lines, tableLine{note: "no measurements"})
	}
	lines[0].label = r.Label
	return lines
}

// WriteScenarioText writes a scenario's results for a terminal: its title
// underlined, its workload, and an aligned table of its cases, with a line
// for each skipped or incomplete case saying why.
func WriteScenarioText(w io.Writer, s Scenario) error {
	underline := strings.Repeat("=", utf8.RuneCountInString(s.Title))
	if _, err := fmt.Fprintf(w, "%s\n%s\n%s\n\n", s.Title, underline, s.Workload); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tableColumns(s), "\t"))
	for _, l := range tableLines(s) {
		if l.note != "" {
			// Not followed by a tab, the note does not widen the metric column.
			fmt.Fprintf(tw, "%s\t%s\n", l.label, l.note)
		} else {
			fmt.Fprintf(tw, "%s\t%s\n", l.label, strings.Join(l.cells, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// How to read the results, on the Markdown page.
const howToRead = `**cache** is the server with the watch cache on; **etcd** is the same server
with ` + "`--watch-cache=false`" + `, which reads etcd on every request. **cache advantage** is
etcd/cache for latencies and costs and cache/etcd for throughputs: above 1× the cache did
better, below 1× worse. Sizes are in decimal units: 1 KB = 1000 B, 1 MB = 1000 KB.`

// Markdown renders the report as a Markdown page: the command that produced
// it, the machine, when it ran and for how long, the shared setup, how to
// read the tables, then a section per scenario with its table and links to
// its charts (see Charts), which WriteOut writes next to the page.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# watchcache benchmark: the watch cache against etcd\n\n")
	fence := "```"
	for strings.Contains(r.Command, fence) {
		fence += "`"
	}
	fmt.Fprintf(&b, "Produced on %s by:\n\n%ssh\n%s\n%s\n\n", r.Machine.describe(), fence, r.Command, fence)
	fmt.Fprintf(&b, "Started %s UTC; the whole run took %s.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04:05"), r.Elapsed.Round(time.Second))
	if len(r.Setup) > 0 {
		b.WriteString("## Setup\n\n")
		for _, s := range r.Setup {
			fmt.Fprintf(&b, "- %s\n", s)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## How to read the results\n\n%s\n", howToRead)
	for _, s := range r.Scenarios {
		b.WriteString("\n")
		writeScenarioMarkdown(&b, s)
	}
	return b.String()
}

// describe says in words what the machine is.
func (m Machine) describe() string {
	return fmt.Sprintf("%s (%d logical CPUs, %.1f GiB of memory), %s, Go %s, etcd %s",
		orUnknown(m.CPU), m.Cores, float64(m.MemoryBytes)/(1<<30), orUnknown(m.OS), orUnknown(m.Go), orUnknown(m.Etcd))
}

// orUnknown returns s, or "unknown" if it is empty.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// mdCell escapes s for a Markdown table cell.
var mdCell = strings.NewReplacer("|", `\|`, "\n", " ")

// mdAlt escapes s for the alternative text of a Markdown image.
var mdAlt = strings.NewReplacer("[", `\[`, "]", `\]`, "\n", " ")

// writeScenarioMarkdown writes a scenario's section of the Markdown page.
func writeScenarioMarkdown(b *strings.Builder, s Scenario) {
	fmt.Fprintf(b, "## %s\n\n%s\n\n", s.Title, s.Workload)
	columns := tableColumns(s)
	fmt.Fprintf(b, "| %s |\n|---|---|%s\n", strings.Join(columns, " | "), strings.Repeat("--:|", len(columns)-2))
	for _, l := range tableLines(s) {
		cells := append([]string{l.label}, l.cells...)
		if l.note != "" {
			cells = append([]string{l.label, "*" + l.note + "*"}, make([]string, len(columns)-2)...)
		}
		for i, c := range cells {
			cells[i] = mdCell.Replace(c)
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
	for _, p := range planCharts(s) {
		fmt.Fprintf(b, "\n![%s](%s)\n", mdAlt.Replace(p.title), p.file)
	}
}

// WriteOut creates dir if needed and writes the report into it:
// results.json (the report as indented JSON), every scenario's charts (see
// Charts) and README.md (the report's Markdown, which links the charts), so
// that a Git host renders the directory as a page with its charts.
func WriteOut(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	for _, s := range r.Scenarios {
		charts, err := Charts(s)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", s.ID, err)
		}
		for _, c := range charts {
			if err := os.WriteFile(filepath.Join(dir, c.File), c.SVG, 0o644); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(r.Markdown()), 0o644)
}
