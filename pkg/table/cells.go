// The kinds of cells a column shows, read from an object's JSON: text,
// integers, booleans, counts, ratios, ages and dates, containers, selectors,
// labels, quantities, and cells computed by code, as kubectl prints them.

package table

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The reusable kinds of cells.

// text is the string at path ("" when absent); a number or a boolean
// prints as its JSON text.
func text(path string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any { return v[0].str() }}
}

// textOr is the string at path, or none when it is absent or empty.
func textOr(path, none string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any { return or(v[0].str(), none) }}
}

// optional is the string at path (even empty), or unset when the field is
// absent: kube's optional (pointer) fields.
func optional(path, unset string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any {
		if !v[0].present() {
			return unset
		}
		return v[0].str()
	}}
}

// integer is the integer at path, 0 when absent.
func integer(path string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any { return v[0].int() }}
}

// boolean is the boolean at path, false when absent.
func boolean(path string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any { return v[0].bool() }}
}

// count is the number of elements of the lists (or members of the maps)
// at paths, all together.
func count(paths ...string) cell {
	return cell{paths, func(v []raw, _ *row) any {
		n := 0
		for _, r := range v {
			n += r.count()
		}
		return int64(n)
	}}
}

// ratio is "ready/desired" of the integers at two paths.
func ratio(ready, desired string) cell {
	return cell{[]string{ready, desired}, func(v []raw, _ *row) any {
		return fmt.Sprintf("%d/%d", v[0].int(), v[1].int())
	}}
}

// age is the time since the timestamp at path, as kubectl shows ages.
func age(path string) cell {
	return cell{[]string{path}, func(v []raw, r *row) any { return since(v[0].time(), r.now) }}
}

// date is the timestamp at path in RFC 3339, in UTC.
func date(path string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any { return v[0].time().UTC().Format(time.RFC3339) }}
}

// containers joins the field (name or image) of each container of the
// list at path with commas.
func containers(path, field string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any {
		var b strings.Builder
		for c := range v[0].elements() {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(c.get(field).str())
		}
		return b.String()
	}}
}

// labelSelector is the metav1.LabelSelector at path as kubectl writes
// selectors ("app=web,tier in (a,b)"), "<none>" when it selects nothing
// or everything.
func labelSelector(path string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any {
		sel, err := selector(v[0])
		if err != nil {
			return "<error>"
		}
		return or(sel, "<none>")
	}}
}

// labelMap is the map of labels at path as "k1=v1,k2=v2" in key order,
// "<none>" when empty.
func labelMap(path string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any {
		var labels [][2]string
		for k, val := range v[0].members() {
			labels = append(labels, [2]string{string(k), val.str()})
		}
		slices.SortFunc(labels, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		var b strings.Builder
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l[0] + "=" + l[1])
		}
		return or(b.String(), "<none>")
	}}
}

// quantity is the resource quantity at path in canonical form ("0" when
// absent).
func quantity(path string) cell {
	return cell{[]string{path}, func(v []raw, _ *row) any { return canonical(v[0]) }}
}

// computed is a cell that code computes from the values at paths.
func computed(value func(v []raw, r *row) any, paths ...string) cell {
	return cell{paths, value}
}

// Helpers of the cells.

// get is the value of an object's member key (nil when absent).
func (r raw) get(key string) raw {
	for k, v := range r.members() {
		if string(k) == key {
			return v
		}
	}
	return nil
}

// since is the age of t as kubectl shows it ("5m", "3d"), "<unknown>" for
// the zero time.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// or is s, or none when s is empty.
func or(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// selector is the metav1.LabelSelector r as a selector string; "" for an
// absent or empty one.
func selector(r raw) (string, error) {
	var sel *metav1.LabelSelector
	if r.present() {
		if err := json.Unmarshal(r, &sel); err != nil {
			return "", err
		}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}

// canonical is the quantity r in canonical form, "0" when absent and r's
// own text when it does not parse.
func canonical(r raw) string {
	if !r.present() {
		return "0"
	}
	q, err := resource.ParseQuantity(r.str())
	if err != nil {
		return r.str()
	}
	return q.String()
}
