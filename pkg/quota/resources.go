// Arithmetic on resource lists, as kube's quota helpers do it (the
// quantities' formats follow from apimachinery's Quantity.Add and Sub,
// so printed usage reads as kube-apiserver prints it).

package quota

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func one() resource.Quantity  { return *resource.NewQuantity(1, resource.DecimalSI) }
func zero() resource.Quantity { return resource.Quantity{Format: resource.DecimalSI} }

// Add is a + b for each name in either.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		q := v.DeepCopy()
		if o, ok := b[k]; ok {
			q.Add(o)
		}
		out[k] = q
	}
	for k, v := range b {
		if _, ok := out[k]; !ok {
			out[k] = v.DeepCopy()
		}
	}
	return out
}

// subtractNonNegative is a - b for each name in either, never below 0.
func subtractNonNegative(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	z := resource.MustParse("0")
	for k, v := range a {
		q := v.DeepCopy()
		if o, ok := b[k]; ok {
			q.Sub(o)
		}
		if q.Cmp(z) > 0 {
			out[k] = q
		} else {
			out[k] = z
		}
	}
	for k := range b {
		if _, ok := out[k]; !ok {
			out[k] = z
		}
	}
	return out
}

// Mask is the entries of list named in keep.
func Mask(list corev1.ResourceList, keep []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range list {
		if slices.Contains(keep, k) {
			out[k] = v.DeepCopy()
		}
	}
	return out
}

// Equal says whether a and b have the same names and equal quantities.
func Equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		o, ok := b[k]
		if !ok || v.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// lessOrEqual says whether a ≤ b for every name of b that a has, and
// which exceed.
func lessOrEqual(a, b corev1.ResourceList) (bool, []corev1.ResourceName) {
	var over []corev1.ResourceName
	for k, limit := range b {
		if v, ok := a[k]; ok && v.Cmp(limit) > 0 {
			over = append(over, k)
		}
	}
	return len(over) == 0, over
}

// removeZeros drops the zero quantities.
func removeZeros(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range list {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// negative are the names with a negative quantity.
func negative(list corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k, v := range list {
		if v.Sign() < 0 {
			out = append(out, k)
		}
	}
	return out
}

// Names are list's names.
func Names(list corev1.ResourceList) []corev1.ResourceName {
	return slices.Collect(maps.Keys(list))
}

// intersection are the names of a that b has, once each.
func intersection(a, b []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range a {
		if slices.Contains(b, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// difference are the names of a that b has not.
func difference(a, b []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// prettyPrint is list as kube-apiserver's messages print it:
// name=quantity, by name, comma-separated.
func prettyPrint(list corev1.ResourceList) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(list)) {
		v := list[k]
		parts = append(parts, string(k)+"="+v.String())
	}
	return strings.Join(parts, ",")
}

// prettyNames is names sorted, comma-separated.
func prettyNames(list []corev1.ResourceName) string {
	s := make([]string, len(list))
	for i, n := range list {
		s[i] = string(n)
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}
