// The CertificateSigningRequest strategy on update: the spec never
// changes; /status keeps the Approved and Denied conditions as they were
// (validation refuses adding or removing them there); every write stamps
// the conditions that lack them with lastUpdateTime and
// lastTransitionTime, as kube-apiserver's strategies do.

package strategy

import (
	"time"

	"github.com/watchcache/watchcache/pkg/resource"
)

func isCSR(res *resource.Resource) bool {
	return res.Group == "certificates.k8s.io" && res.Plural == "certificatesigningrequests"
}

// prepareCSRUpdate finishes an update of a CertificateSigningRequest
// through subresource ("", "status" or "approval") once the generic
// strategy has run.
func prepareCSRUpdate(subresource string, obj, old map[string]any) {
	if spec, ok := old["spec"]; ok {
		obj["spec"] = spec
	}
	conditions, _ := lookup(obj, []string{"status", "conditions"})
	list, _ := conditions.([]any)
	oldConditions, _ := lookup(old, []string{"status", "conditions"})
	oldList, _ := oldConditions.([]any)
	if subresource == "status" {
		for _, t := range []string{"Approved", "Denied"} {
			keepConditionInstances(list, oldList, t)
		}
	}
	stampConditions(list, oldList, time.Now().UTC().Format(time.RFC3339))
}

// keepConditionInstances puts old's conditions of type t back in place of
// list's, when both have as many.
func keepConditionInstances(list, old []any, t string) {
	var at, was []int
	for i, c := range list {
		if typeOf(c) == t {
			at = append(at, i)
		}
	}
	for i, c := range old {
		if typeOf(c) == t {
			was = append(was, i)
		}
	}
	if len(at) != len(was) {
		return
	}
	for i, j := range at {
		list[j] = old[was[i]]
	}
}

// stampConditions sets lastUpdateTime to now where unset, and
// lastTransitionTime to old's of the same type and status if it had one,
// else now.
func stampConditions(list, old []any, now string) {
	for _, c := range list {
		cond, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if cond["lastUpdateTime"] == nil {
			cond["lastUpdateTime"] = now
		}
		if cond["lastTransitionTime"] != nil {
			continue
		}
		cond["lastTransitionTime"] = now
		for _, o := range old {
			prev, _ := o.(map[string]any)
			if prev["type"] == cond["type"] && prev["status"] == cond["status"] && prev["lastTransitionTime"] != nil {
				cond["lastTransitionTime"] = prev["lastTransitionTime"]
				break
			}
		}
	}
}

// typeOf is a condition's type.
func typeOf(c any) any {
	cond, _ := c.(map[string]any)
	return cond["type"]
}
