// The report's types: Report, Machine, Scenario, Row, Metric and its units,
// and a metric's advantage of the cache.

package bench

import "time"

// Report is everything one run of the benchmark measured, in the order the
// scenarios ran. It is written as results.json and rendered as Markdown and
// SVG charts.
type Report struct {
	// Command is the exact command line that produced the report.
	Command string `json:"command"`
	// Machine describes where it ran.
	Machine Machine `json:"machine"`
	// Started is when the run began; Elapsed is how long all of it took.
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsedNanos"`
	// Setup lists, in words, the settings every scenario shares (servers'
	// flags, etcd's settings, data sizes).
	Setup []string `json:"setup"`
	// Scenarios in the order they ran.
	Scenarios []Scenario `json:"scenarios"`
}

// Machine describes the computer a report comes from.
type Machine struct {
	CPU         string `json:"cpu"`         // model name from /proc/cpuinfo
	Cores       int    `json:"cores"`       // logical CPUs usable by the process
	MemoryBytes int64  `json:"memoryBytes"` // MemTotal from /proc/meminfo
	OS          string `json:"os"`          // e.g. "linux 6.1.0-18-amd64"
	Go          string `json:"go"`          // Go version the binary was built with
	Etcd        string `json:"etcd"`        // version of the embedded etcd server module
}

// Scenario is one of the benchmark's workloads, measured against the
// cache-on and the cache-off server.
type Scenario struct {
	// ID is a short stable name ("matrix", "kubelet", ...), used for file names.
	ID string `json:"id"`
	// Title is a heading, e.g. "Consistent LIST by collection and object size".
	Title string `json:"title"`
	// Workload says in one or two sentences what was run.
	Workload string `json:"workload"`
	// Rows are the measured cases, e.g. one per (collection size, object size).
	Rows []Row `json:"rows"`
	// Sides names the two servers compared when they are not the cache-on
	// and the cache-off one: Metric.Cache is measured against the first,
	// Metric.Etcd against the second. A single name says that only one
	// server was measured: its table has no second column and no ratio.
	Sides []string `json:"sides,omitempty"`
	// Ratio, when not empty, names the ratio column instead of
	// "<first side> advantage" (e.g. the margin of a measurement under its
	// objective).
	Ratio string `json:"ratio,omitempty"`
	// Charts, when not empty, names metrics charted each on a chart of its
	// own against the rows' X (both axes logarithmic) instead of the p50
	// and p99 latencies of each Group; XAxis names the X axis of every chart
	// (default "objects in the list").
	Charts []string `json:"charts,omitempty"`
	XAxis  string   `json:"xAxis,omitempty"`
}

// sideNames are the names of a scenario's two sides; second is "" when
// only one server was measured.
func (s Scenario) sideNames() (first, second string) {
	switch len(s.Sides) {
	case 1:
		return s.Sides[0], ""
	case 2:
		return s.Sides[0], s.Sides[1]
	}
	return "cache", "etcd"
}

// oneSided says whether only one server was measured.
func (s Scenario) oneSided() bool { return len(s.Sides) == 1 }

// Row is one case of a scenario.
type Row struct {
	// Label names the case, e.g. "1,000 × 25 KB" or "16 clients".
	Label string `json:"label"`
	// Group and X place the row in a chart: one chart line pair per Group,
	// X on a logarithmic axis (e.g. Group "25 KB", X 1000 objects). Rows with
	// an empty Group are not charted.
	Group string  `json:"group,omitempty"`
	X     float64 `json:"x,omitempty"`
	// Skipped, when not empty, says why the case was not run; Metrics is
	// then empty.
	Skipped string `json:"skipped,omitempty"`
	// Incomplete, when not empty, says what did not finish (e.g. a watch
	// that did not deliver every event before the deadline); the metrics
	// are still what was measured.
	Incomplete string   `json:"incomplete,omitempty"`
	Metrics    []Metric `json:"metrics,omitempty"`
}

// Metric is one measured quantity of a row for both servers.
type Metric struct {
	// Name is e.g. "p50", "p99", "throughput", "server CPU per request".
	Name string `json:"name"`
	// Unit is one of the Unit constants.
	Unit Unit `json:"unit"`
	// Cache and Etcd are the values measured against the cache-on and the
	// cache-off (--watch-cache=false) server.
	Cache float64 `json:"cache"`
	Etcd  float64 `json:"etcd"`
	// HigherIsBetter is true for throughputs, false for latencies and costs.
	HigherIsBetter bool `json:"higherIsBetter,omitempty"`
	// FirstOnly says that only Cache, the first side, was measured (e.g. a
	// server's memory beside latencies compared with their objectives):
	// Etcd and the ratio are shown as "–".
	FirstOnly bool `json:"firstOnly,omitempty"`
}

// Unit says how a Metric's values are expressed.
type Unit string

// The units metrics are expressed in.
const (
	Seconds     Unit = "s"     // durations, as float seconds
	PerSecond   Unit = "/s"    // operations or events per second
	MBPerSecond Unit = "MB/s"  // bytes per second, in millions
	Bytes       Unit = "B"     // sizes
	CPUSeconds  Unit = "CPU s" // processor time
	Count       Unit = "count" // plain numbers
	Cores       Unit = "cores" // processor time per second of wall time
)

// Advantage is how many times better the cache-on server did than the
// cache-off one: Etcd/Cache for latencies and costs, Cache/Etcd for
// throughputs. It is 0 when the ratio is undefined (a zero value, or a
// metric measured on one side only).
func (m Metric) Advantage() float64 {
	if m.FirstOnly {
		return 0
	}
	num, den := m.Etcd, m.Cache
	if m.HigherIsBetter {
		num, den = m.Cache, m.Etcd
	}
	if num == 0 || den == 0 {
		return 0
	}
	return num / den
}
