// The list of scenarios, their names and help for --scenarios, and which run
// on the shared setup.

package bench

import (
	"fmt"
	"slices"
	"strings"
)

// scenarioInfo describes a scenario for --scenarios: its short stable name
// (the ID of its results), what it measures, and whether it runs by default.
type scenarioInfo struct {
	name, about string
	// shared says the scenario runs on the shared setup (etcd, the
	// cache-on and the cache-off server over the same data) and by default;
	// the others start their own etcd and cache-on server, and run only
	// when named (or with "all").
	shared bool
}

// scenarioList is every scenario in the order Run runs them.
var scenarioList = []scenarioInfo{
	{"initialization", "cache initialization time and memory per object", true},
	{"matrix", "consistent LISTs by collection size and object size (KEP-2340)", true},
	{"kubelet", "kubelets' consistent LIST of their node's pods", true},
	{"kubelet-auth", "the same with bearer tokens and RBAC against AlwaysAllow", true},
	{"select-nothing", "a selector that selects nothing: latency and CPU per request", true},
	{"paginated", "a paginated pass over all pods", true},
	{"fanout", "watch fan-out", true},
	{"writes", "creates and updates: what the cache costs writers", true},
	{"shards", "sharded list and watch (KEP-5866): 4 sharded informers against one unsharded, and their union", true},
	{"nodes", "a cluster's load on one cache-on server: kubelets, leases, node status, pod churn, informers; SLIs against Kubernetes' SLOs", false},
	{"curves", "cost curves: initialization, memory, lists and fan-out at growing numbers of pods", false},
	{"protobuf", "protobuf against JSON on one cache-on server: LIST all, kubelets, fan-out, client decode and informer sync, memory", false},
	{"writepath", "issue 29's write load: pods created by 32 clients, then a pods/status merge patch each; throughput, latency, server CPU per write, RSS", false},
	{"etcdlists", "issue 29's large lists from etcd: config maps of 4 KB listed by a cache-off server, one LIST alone, then ten at once; time, MB/s, server CPU, RSS growth", false},
}

// AllScenarios is the value of --scenarios that runs every scenario.
const AllScenarios = "all"

// ScenarioNames returns the name of every scenario, in the order they run.
func ScenarioNames() []string {
	var names []string
	for _, s := range scenarioList {
		names = append(names, s.name)
	}
	return names
}

// DefaultScenarios returns the scenarios run when --scenarios is not
// given: those of the shared setup, the benchmark's default run.
func DefaultScenarios() []string {
	var names []string
	for _, s := range scenarioList {
		if s.shared {
			names = append(names, s.name)
		}
	}
	return names
}

// ScenarioHelp describes every scenario, one per line, "name: what it
// measures", marking those that run only when named.
func ScenarioHelp() string {
	var b strings.Builder
	for _, s := range scenarioList {
		fmt.Fprintf(&b, "  %-15s %s", s.name, s.about)
		if !s.shared {
			b.WriteString(" (only when named, or with all)")
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ParseScenarios parses a comma-separated list of scenario names, or
// "all", into the scenarios to run in the order they run; an unknown or
// repeated name is an error.
func ParseScenarios(v string) ([]string, error) {
	if strings.TrimSpace(v) == AllScenarios {
		return ScenarioNames(), nil
	}
	known := ScenarioNames()
	var names []string
	for _, item := range strings.Split(v, ",") {
		name := strings.TrimSpace(item)
		switch {
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("unknown scenario %q (known: %s, or %s)", name, strings.Join(known, ", "), AllScenarios)
		case slices.Contains(names, name):
			return nil, fmt.Errorf("scenario %q named twice", name)
		}
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return slices.Index(known, a) - slices.Index(known, b) })
	return names, nil
}

// runs says whether the run includes the named scenario.
func (c *Config) runs(name string) bool { return slices.Contains(c.Scenarios, name) }

// sharedScenario says whether the named scenario runs on the shared setup.
func sharedScenario(name string) bool {
	i := slices.IndexFunc(scenarioList, func(s scenarioInfo) bool { return s.name == name })
	return i >= 0 && scenarioList[i].shared
}

// runsShared says whether the run includes any scenario of the shared setup.
func (c *Config) runsShared() bool {
	return slices.ContainsFunc(c.Scenarios, sharedScenario)
}
