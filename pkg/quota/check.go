// The check of one write against a namespace's quotas, with kube-apiserver's
// refusals.

package quota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Write is one create or update as quota admission checks it.
type Write struct {
	Evaluator *Evaluator
	// Obj is the object to be stored; Old, for an update, the stored one
	// (Update set).
	Obj, Old Object
	Update   bool
}

// Refusal is a write's refusal by quota: kube-apiserver answers it with a
// 403 Forbidden naming the object.
type Refusal struct{ Message string }

func (r *Refusal) Error() string { return r.Message }

func refuse(format string, args ...any) error { return &Refusal{fmt.Sprintf(format, args...)} }

// Check checks w against quotas (a namespace's, as last read) as
// kube-apiserver's quota admission does, and returns them with w's usage
// added to the status.used of those that count it (quotas itself is not
// changed), or a *Refusal: a quota that counts w must have the usage of
// each resource it limits in its status ("status unknown") and room for
// w's usage ("exceeded quota"), and w must satisfy its constraints (a pod
// under a cpu or memory quota names them for every container: "failed
// quota"). An update is charged only what it adds. A quota without
// status.hard (the controller has not seen it yet) counts nothing.
func Check(quotas []corev1.ResourceQuota, w Write, now time.Time) ([]corev1.ResourceQuota, error) {
	e := w.Evaluator
	var counting []int
	for i := range quotas {
		q := &quotas[i]
		match, err := e.matches(q, w.Obj)
		if err != nil {
			return nil, refuse("error matching scopes of quota %s, err: %v", q.Name, err)
		}
		if !match {
			continue
		}
		limited := e.Matching(Names(q.Status.Hard))
		if e.kind != nil {
			if err := e.kind.constraints(limited, w.Obj.v); err != nil {
				return nil, refuse("failed quota: %s: %v", q.Name, err)
			}
		}
		for _, n := range limited {
			if _, ok := q.Status.Used[n]; !ok {
				return nil, refuse("status unknown for quota: %s, resources: %s", q.Name, prettyNames(limited))
			}
		}
		counting = append(counting, i)
	}
	delta := e.Usage(w.Obj, now)
	if neg := negative(delta); len(neg) > 0 {
		return nil, refuse("quota usage is negative for resource(s): %s", prettyNames(neg))
	}
	if w.Update {
		delta = subtractNonNegative(delta, e.Usage(w.Old, now))
	}
	delta = removeZeros(delta)
	if len(delta) == 0 || len(counting) == 0 {
		return quotas, nil
	}
	out := make([]corev1.ResourceQuota, len(quotas))
	for i := range quotas {
		out[i] = *quotas[i].DeepCopy()
	}
	for _, i := range counting {
		q := &out[i]
		hard := Names(q.Status.Hard)
		requested := Mask(delta, hard)
		used := Add(q.Status.Used, requested)
		if ok, over := lessOrEqual(Mask(used, Names(requested)), q.Status.Hard); !ok {
			return nil, refuse("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				prettyPrint(Mask(requested, over)), prettyPrint(Mask(q.Status.Used, over)), prettyPrint(Mask(q.Status.Hard, over)))
		}
		q.Status.Used = used
	}
	return out, nil
}
