// The cells of workloads' rows: a Deployment's selector, a Job's status,
// completions and duration, a CronJob's suspend and last schedule, and an
// object's controller.

package table

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/duration"
)

// deploymentSelector is a deployment's selector ("" for an empty one).
func deploymentSelector(v []raw, _ *row) any {
	s, err := selector(v[0])
	if err != nil {
		return "<invalid>"
	}
	return s
}

// jobStatus is the state of a job its conditions (and deletion) give.
func jobStatus(v []raw, _ *row) any {
	conditions, deleting := v[0], v[1].present()
	is := func(typ string) bool {
		_, status, _ := condition(conditions, typ)
		return status == "True"
	}
	switch {
	case is("Complete"):
		return "Complete"
	case is("Failed"):
		return "Failed"
	case deleting:
		return "Terminating"
	case is("Suspended"):
		return "Suspended"
	case is("FailureTarget"):
		return "FailureTarget"
	case is("SuccessCriteriaMet"):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// completions are a job's succeeded pods of its completions: "1/3", or
// "1/1 of 4" for a parallel job without a completion count.
func completions(v []raw, _ *row) any {
	succeeded, completions, parallelism := v[0].int(), v[1], v[2].int()
	switch {
	case completions.present():
		return fmt.Sprintf("%d/%d", succeeded, completions.int())
	case parallelism > 1:
		return fmt.Sprintf("%d/1 of %d", succeeded, parallelism)
	}
	return fmt.Sprintf("%d/1", succeeded)
}

// jobDuration is how long a job ran (so far), "" before it started.
func jobDuration(v []raw, r *row) any {
	start, completion := v[0].time(), v[1].time()
	switch {
	case !v[0].present():
		return ""
	case !v[1].present():
		return duration.HumanDuration(r.now.Sub(start))
	}
	return duration.HumanDuration(completion.Sub(start))
}

// suspend is whether a cron job is suspended: True, False or "<unset>".
func suspend(v []raw, _ *row) any {
	switch {
	case !v[0].present():
		return "<unset>"
	case v[0].bool():
		return "True"
	}
	return "False"
}

// lastSchedule is the age of a cron job's last schedule, "<none>" before
// the first.
func lastSchedule(v []raw, r *row) any {
	if !v[0].present() {
		return "<none>"
	}
	return since(v[0].time(), r.now)
}

// controller names an object's controller as "kind.group/name"
// (lowercase kind and group), "<none>" without one.
func controller(v []raw, _ *row) any {
	for ref := range v[0].elements() {
		if !ref.get("controller").bool() {
			continue
		}
		group, _, found := strings.Cut(ref.get("apiVersion").str(), "/")
		if !found {
			group = ""
		}
		kind, name := ref.get("kind").str(), ref.get("name").str()
		switch {
		case kind == "" && group == "":
			return name
		case group != "":
			kind += "." + group
		}
		return strings.ToLower(kind) + "/" + name
	}
	return "<none>"
}
