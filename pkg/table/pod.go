// The cells of Pods' rows: Ready, Status and Restarts summarized from
// container statuses and conditions as kubectl's printer does, IP and
// readiness gates.

package table

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// podRow is what a pod's Ready, Status and Restarts cells show.
type podRow struct {
	ready    string // "1/2": ready containers (and started sidecars) of all
	status   string // the phase, or the reason the containers give
	restarts string // "0", or "3 (5m ago)"
}

// podPaths are what summarizePod reads, in this order.
var podPaths = []string{
	"metadata.deletionTimestamp", "status.phase", "status.reason", "status.conditions",
	"spec.containers", "spec.initContainers", "status.initContainerStatuses", "status.containerStatuses",
}

// podCell is a cell showing one part of the pod's summary, computed
// once per row.
func podCell(part func(podRow) string) cell {
	return cell{podPaths, func(v []raw, r *row) any {
		if r.pod == nil {
			p := summarizePod(v, r.now)
			r.pod = &p
		}
		return part(*r.pod)
	}}
}

// containerStatus is what the summary reads of a container's status.
type containerStatus struct {
	name         string
	ready        bool
	started      bool
	restarts     int
	running      bool
	waiting      string // state.waiting.reason
	terminated   bool
	reason       string // state.terminated.reason
	exitCode     int64
	signal       int64
	lastFinished time.Time // lastState.terminated.finishedAt
}

var containerStatusPaths = compile([]string{
	"name", "ready", "started", "restartCount", "state.running", "state.waiting.reason", "state.terminated",
	"state.terminated.reason", "state.terminated.exitCode", "state.terminated.signal", "lastState.terminated.finishedAt",
})

// readContainerStatus reads a container's status in one scan.
func readContainerStatus(r raw) containerStatus {
	var v [11]raw
	containerStatusPaths.capture(r, v[:])
	return containerStatus{
		name: v[0].str(), ready: v[1].bool(), started: v[2].bool(), restarts: int(v[3].int()),
		running: v[4].present(), waiting: v[5].str(), terminated: v[6].present(),
		reason: v[7].str(), exitCode: v[8].int(), signal: v[9].int(), lastFinished: v[10].time(),
	}
}

// condition is whether a condition of the given type is in the list, and
// its status and reason (of the first one of the type).
func condition(conditions raw, typ string) (found bool, status, reason string) {
	for c := range conditions.elements() {
		if c.get("type").str() == typ {
			return true, c.get("status").str(), c.get("reason").str()
		}
	}
	return false, "", ""
}

// summarizePod computes a pod's Ready, Status and Restarts as
// kube-apiserver's printer does, from the values at podPaths.
func summarizePod(v []raw, now time.Time) podRow {
	deleting, phase, podReason, conditions := v[0].present(), v[1].str(), v[2].str(), v[3]
	containers, initContainers, initStatuses, statuses := v[4], v[5], v[6], v[7]

	reason := or(podReason, phase)
	for c := range conditions.elements() {
		if c.get("type").str() == "PodScheduled" && c.get("reason").str() == "SchedulingGated" {
			reason = "SchedulingGated"
		}
	}

	// Sidecars (init containers that restart always) count as containers.
	total, inits := containers.count(), 0
	var sidecars []string
	for c := range initContainers.elements() {
		inits++
		if c.get("restartPolicy").str() == "Always" {
			sidecars = append(sidecars, c.get("name").str())
		}
	}
	total += len(sidecars)

	ready, restarts, sidecarRestarts := 0, 0, 0
	var lastRestart, lastSidecarRestart time.Time
	initializing := false
	i := -1
	for r := range initStatuses.elements() {
		i++
		c := readContainerStatus(r)
		sidecar := slices.Contains(sidecars, c.name)
		restarts += c.restarts
		lastRestart = latest(lastRestart, c.lastFinished)
		if sidecar {
			sidecarRestarts += c.restarts
			lastSidecarRestart = latest(lastSidecarRestart, c.lastFinished)
		}
		switch {
		case c.terminated && c.exitCode == 0:
			continue
		case sidecar && c.started:
			if c.ready {
				ready++
			}
			continue
		case c.terminated:
			switch {
			case c.reason != "":
				reason = "Init:" + c.reason
			case c.signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", c.signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", c.exitCode)
			}
		case c.waiting != "" && c.waiting != "PodInitializing":
			reason = "Init:" + c.waiting
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, inits)
		}
		initializing = true
		break
	}

	if initialized, status, _ := condition(conditions, "Initialized"); !initializing || initialized && status == "True" {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		var list []raw
		for r := range statuses.elements() {
			list = append(list, r)
		}
		running, errorReason := false, ""
		for _, r := range slices.Backward(list) {
			c := readContainerStatus(r)
			restarts += c.restarts
			lastRestart = latest(lastRestart, c.lastFinished)
			switch {
			case c.waiting != "":
				reason = c.waiting
			case c.terminated:
				switch {
				case c.reason != "":
					reason = c.reason
				case c.signal != 0:
					reason = fmt.Sprintf("Signal:%d", c.signal)
				default:
					reason = fmt.Sprintf("ExitCode:%d", c.exitCode)
				}
				if c.exitCode != 0 {
					errorReason = reason
				}
			case c.ready && c.running:
				running = true
				ready++
			}
		}
		// Running containers of a pod whose others completed make it
		// Running (or NotReady), failed ones make it their failure.
		if reason == "Completed" {
			podReady, status, _ := condition(conditions, "Ready")
			switch {
			case running && podReady && status == "True":
				reason = "Running"
			case errorReason != "":
				reason = errorReason
			case running:
				reason = "NotReady"
			}
		}
	}

	switch {
	case deleting && podReason == "NodeLost":
		reason = "Unknown"
	case deleting && phase != "Succeeded" && phase != "Failed":
		reason = "Terminating"
	}

	restartsText := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsText = fmt.Sprintf("%d (%s ago)", restarts, since(lastRestart, now))
	}
	return podRow{ready: fmt.Sprintf("%d/%d", ready, total), status: reason, restarts: restartsText}
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// podIP is the pod's first IP, "<none>" before it has one.
func podIP(v []raw, _ *row) any {
	for ip := range v[0].elements() {
		return or(ip.get("ip").str(), "<none>")
	}
	return or(v[1].str(), "<none>")
}

// readinessGates is how many of the pod's readiness gates have their
// condition true, "1/2"; "<none>" when it has none.
func readinessGates(v []raw, _ *row) any {
	gates, conditions := v[0], v[1]
	n, satisfied := 0, 0
	for g := range gates.elements() {
		n++
		if found, status, _ := condition(conditions, g.get("conditionType").str()); found && status == "True" {
			satisfied++
		}
	}
	if n == 0 {
		return "<none>"
	}
	return fmt.Sprintf("%d/%d", satisfied, n)
}
