// The checks validation is built of, with kube-apiserver's error messages:
// required and enumerated fields, ports, selectors matching templates, cron
// schedules, immutable fields and the updates allowed to pods, claims,
// volumes and immutable ConfigMaps and Secrets.

package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The kinds of checks the kinds' lists are made of. Each returns the
// Check for a path; messages are kube-apiserver's.

// errorOf makes the error for a bad value v at p.
type errorOf func(p *field.Path, v any) *field.Error

// invalid: the value is invalid, for msg.
func invalid(msg string) errorOf {
	return func(p *field.Path, v any) *field.Error { return field.Invalid(p, v, msg) }
}

// invalidUnshown: the value is invalid, for msg; the error shows null for
// it, as kube-apiserver's declarative validation does.
func invalidUnshown(msg string) errorOf {
	return func(p *field.Path, _ any) *field.Error { return field.Invalid(p, nil, msg) }
}

// notSupported: the value is none of values.
func notSupported(values ...string) errorOf {
	return func(p *field.Path, v any) *field.Error { return field.NotSupported(p, v, values) }
}

// forbidden: the field may not be set so, for msg.
func forbidden(msg string) errorOf {
	return func(p *field.Path, _ any) *field.Error { return field.Forbidden(p, msg) }
}

// isEmpty reports whether a JSON value is unset for a "Required value":
// absent, null, "", or an empty list or object.
func isEmpty(v any, present bool) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return !present
}

// required: the field must be set.
func required(path string) Check {
	return requiredWith(path, "")
}

// requiredWith: the field must be set; detail says what it may hold.
func requiredWith(path, detail string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, present bool) field.ErrorList {
		if isEmpty(v, present) {
			return field.ErrorList{field.Required(p, detail)}
		}
		return nil
	}}
}

// oneOf: a set field holds one of values.
func oneOf(path string, values ...string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, present bool) field.ErrorList {
		s, _ := v.(string)
		if present && !slices.Contains(values, s) {
			return field.ErrorList{field.NotSupported(p, v, values)}
		}
		return nil
	}}
}

// requiredOneOf: the field must be set to one of values (a Job's pods'
// restartPolicy).
func requiredOneOf(path string, values ...string) Check {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	detail := "valid values: " + strings.Join(quoted, ", ")
	return Check{Path: path, Test: func(p *field.Path, v any, present bool) field.ErrorList {
		s, _ := v.(string)
		switch {
		case s == "":
			return field.ErrorList{field.Required(p, detail)}
		case !slices.Contains(values, s):
			return field.ErrorList{field.NotSupported(p, v, values)}
		}
		return nil
	}}
}

// atLeast: a set integer is at least min; message as kube-apiserver's for
// that bound ("must be greater than or equal to 0", "must be greater than
// 0").
func atLeast(path string, min int64) Check {
	msg := fmt.Sprintf("must be greater than or equal to %d", min)
	if min == 1 {
		msg = "must be greater than 0"
	}
	return Check{Path: path, Test: func(p *field.Path, v any, present bool) field.ErrorList {
		if n, ok := v.(int64); present && ok && n < min {
			return field.ErrorList{field.Invalid(p, n, msg)}
		}
		return nil
	}}
}

// portNumber: an integer port (0 when absent) is in 1..65535; a port name
// is left to the named port's rules. requiredPort says an unset port is
// "Required value" rather than invalid.
func portNumber(path string, requiredPort bool) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, present bool) field.ErrorList {
		if _, isName := v.(string); isName {
			return nil
		}
		n, _ := v.(int64)
		switch {
		case n == 0 && requiredPort:
			return field.ErrorList{field.Required(p, "")}
		case n < 1 || n > 65535:
			return field.ErrorList{field.Invalid(p, n, "must be between 1 and 65535, inclusive")}
		}
		return nil
	}}
}

// uniqueContainerNames: a pod spec's containers and init containers have
// distinct names.
func uniqueContainerNames() Check {
	return Check{Object: func(p *field.Path, spec map[string]any) field.ErrorList {
		var errs field.ErrorList
		seen := map[string]bool{}
		for _, list := range []string{"initContainers", "containers"} {
			items, _ := spec[list].([]any)
			for i, item := range items {
				c, _ := item.(map[string]any)
				name, _ := c["name"].(string)
				if name == "" {
					continue
				}
				if seen[name] {
					errs = append(errs, field.Duplicate(p.Child(list).Index(i).Child("name"), name))
				}
				seen[name] = true
			}
		}
		return errs
	}}
}

// errSelectorMismatch is kube-apiserver's message for a template that its
// workload's selector does not select.
const errSelectorMismatch = "`selector` does not match template `labels`"

// selectsTemplate: a workload spec has a label selector (selector) that
// selects its pod template's labels. rcStyle says the selector is a plain
// map of labels, as a ReplicationController's.
func selectsTemplate(rcStyle bool) Check {
	return Check{Object: func(p *field.Path, spec map[string]any) field.ErrorList {
		var errs field.ErrorList
		raw, hasSelector := spec["selector"]
		if isEmpty(raw, hasSelector) {
			errs = append(errs, field.Required(p.Child("selector"), ""))
		}
		template, _ := spec["template"].(map[string]any)
		meta, _ := template["metadata"].(map[string]any)
		podLabels, _ := meta["labels"].(map[string]any)
		if rcStyle && isEmpty(raw, hasSelector) {
			return errs // a ReplicationController's selector defaults to its template's labels: none
		}
		selector, ok := toSelector(raw, rcStyle)
		if !ok {
			return append(errs, field.Invalid(p.Child("selector"), raw, "invalid label selector"))
		}
		if selector.Empty() || !selector.Matches(toLabelSet(podLabels)) {
			errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), podLabels, errSelectorMismatch))
		}
		return errs
	}}
}

// toSelector reads a selector: a metav1.LabelSelector, or a map of labels.
func toSelector(raw any, rcStyle bool) (labels.Selector, bool) {
	if rcStyle {
		m, _ := raw.(map[string]any)
		return labels.SelectorFromSet(toLabelSet(m)), true
	}
	data, _ := json.Marshal(raw)
	var ls metav1.LabelSelector
	if err := json.Unmarshal(data, &ls); err != nil {
		return nil, false
	}
	s, err := metav1.LabelSelectorAsSelector(&ls)
	return s, err == nil
}

func toLabelSet(m map[string]any) labels.Set {
	set := labels.Set{}
	for k, v := range m {
		s, _ := v.(string)
		set[k] = s
	}
	return set
}

// configKeys: the keys of a ConfigMap's or Secret's data and binaryData
// are valid keys, and no key is in both.
func configKeys() Check {
	return Check{Object: func(p *field.Path, obj map[string]any) field.ErrorList {
		var errs field.ErrorList
		data, _ := obj["data"].(map[string]any)
		binary, _ := obj["binaryData"].(map[string]any)
		for _, f := range []struct {
			name string
			keys map[string]any
		}{{"data", data}, {"binaryData", binary}} {
			for key := range f.keys {
				for _, msg := range utilvalidation.IsConfigMapKey(key) {
					errs = append(errs, field.Invalid(field.NewPath(f.name).Key(key), key, msg))
				}
				if _, dup := data[key]; dup && f.name == "binaryData" {
					errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
				}
			}
		}
		return errs
	}}
}

// cronSchedule: a cron schedule has five fields, or is a descriptor
// ("@hourly", "@every 5m").
func cronSchedule(path string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, present bool) field.ErrorList {
		s, _ := v.(string)
		if s == "" {
			return field.ErrorList{field.Required(p, "")}
		}
		schedule := s
		if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
			_, schedule, _ = strings.Cut(s, " ")
		}
		if strings.HasPrefix(schedule, "@") {
			return nil
		}
		if fields := strings.Fields(schedule); len(fields) != 5 {
			return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("expected exactly 5 fields, found %d: %v", len(fields), fields))}
		}
		return nil
	}}
}

// errImmutable is kube-apiserver's message for a changed immutable field.
const errImmutable = "field is immutable"

// immutable: an update may not change the field.
func immutable(path string) Check { return unchanged(path, invalid(errImmutable)) }

// unchanged: an update that changes the field gets the error changed
// makes of its new value.
func unchanged(path string, changed errorOf) Check {
	return Check{Path: path, Update: func(p *field.Path, v, old any) field.ErrorList {
		if !reflect.DeepEqual(v, old) {
			return field.ErrorList{changed(p, v)}
		}
		return nil
	}}
}

// volumeSourceUpdate: an update of a PersistentVolume's spec changes none
// of its volume source fields.
func volumeSourceUpdate(fields []string) Check {
	return Check{Path: "spec", Update: func(p *field.Path, v, old any) field.ErrorList {
		spec, _ := v.(map[string]any)
		prev, _ := old.(map[string]any)
		for _, f := range fields {
			if !reflect.DeepEqual(spec[f], prev[f]) {
				return field.ErrorList{field.Forbidden(p.Child("persistentvolumesource"), "spec.persistentvolumesource is immutable after creation")}
			}
		}
		return nil
	}}
}

// errClaimUpdate is kube-apiserver's message for an update of a
// PersistentVolumeClaim's spec that changes more than it allows (it
// appends a diff of the specs' Go values, left out here).
const errClaimUpdate = "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"

// claimSpecUpdate: an update of a PersistentVolumeClaim's spec only sets
// volumeName, if unset, and, once the claim is bound, changes its storage
// request and volumeAttributesClassName.
func claimSpecUpdate() Check {
	return Check{Update: func(_ *field.Path, v, old any) field.ErrorList {
		obj, _ := v.(map[string]any)
		prev, _ := old.(map[string]any)
		mutable := []string{}
		if name, _, _ := unstructured.NestedString(prev, "spec", "volumeName"); name == "" {
			mutable = append(mutable, "volumeName")
		}
		if phase, _, _ := unstructured.NestedString(prev, "status", "phase"); phase == "Bound" {
			mutable = append(mutable, "resources.requests.storage", "volumeAttributesClassName")
		}
		if !reflect.DeepEqual(without(obj["spec"], mutable), without(prev["spec"], mutable)) {
			return field.ErrorList{field.Forbidden(field.NewPath("spec"), errClaimUpdate)}
		}
		return nil
	}}
}

// without is a copy of the JSON object v without the fields at paths
// (dotted).
func without(v any, paths []string) map[string]any {
	m, _ := jsontree.DeepCopy(v).(map[string]any)
	for _, path := range paths {
		unstructured.RemoveNestedField(m, strings.Split(path, ".")...)
	}
	return m
}

// immutableData: once a ConfigMap or Secret is immutable, its data,
// binaryData (and stringData) and the flag itself stay as they are.
func immutableData() Check {
	return Check{Update: func(_ *field.Path, v, old any) field.ErrorList {
		obj, _ := v.(map[string]any)
		prev, _ := old.(map[string]any)
		if prev["immutable"] != true {
			return nil
		}
		const msg = "field is immutable when `immutable` is set"
		var errs field.ErrorList
		if obj["immutable"] != true {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
		}
		for _, f := range []string{"data", "binaryData"} {
			if !reflect.DeepEqual(obj[f], prev[f]) {
				errs = append(errs, field.Forbidden(field.NewPath(f), msg))
			}
		}
		return errs
	}}
}

// errPodUpdate is kube-apiserver's message for an update of a pod's spec
// that changes more than it allows (kube-apiserver appends a diff of the
// specs' Go values, which is left out here).
const errPodUpdate = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`," +
	"`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)," +
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

// podSpecUpdate: an update of a pod's spec changes only the images of its
// containers, its activeDeadlineSeconds, terminationGracePeriodSeconds,
// and adds tolerations.
func podSpecUpdate() Check {
	return Check{Path: "spec", Update: func(p *field.Path, v, old any) field.ErrorList {
		spec, _ := v.(map[string]any)
		prev, _ := old.(map[string]any)
		if !addsOnly(prev["tolerations"], spec["tolerations"]) ||
			!reflect.DeepEqual(mutableCleared(spec), mutableCleared(prev)) {
			return field.ErrorList{field.Forbidden(p, errPodUpdate)}
		}
		return nil
	}}
}

// mutableCleared is a copy of a pod spec without the fields an update may
// change.
func mutableCleared(spec map[string]any) map[string]any {
	out := make(map[string]any, len(spec))
	for k, v := range spec {
		out[k] = v
	}
	for _, f := range []string{"activeDeadlineSeconds", "terminationGracePeriodSeconds", "tolerations"} {
		delete(out, f)
	}
	for _, list := range []string{"containers", "initContainers"} {
		items, _ := spec[list].([]any)
		cleared := make([]any, len(items))
		for i, item := range items {
			c, _ := item.(map[string]any)
			cc := make(map[string]any, len(c))
			for k, v := range c {
				if k != "image" {
					cc[k] = v
				}
			}
			cleared[i] = cc
		}
		if items != nil {
			out[list] = cleared
		}
	}
	return out
}

// addsOnly reports whether list after holds every element of before.
func addsOnly(before, after any) bool {
	b, _ := before.([]any)
	a, _ := after.([]any)
	for _, x := range b {
		if !slices.ContainsFunc(a, func(y any) bool { return reflect.DeepEqual(x, y) }) {
			return false
		}
	}
	return true
}

// requireServicePorts: a service has ports unless it is an ExternalName
// or headless service.
func requireServicePorts(p *field.Path, spec map[string]any) field.ErrorList {
	ports, _ := spec["ports"].([]any)
	if len(ports) == 0 && spec["type"] != "ExternalName" && spec["clusterIP"] != "None" {
		return field.ErrorList{field.Required(p.Child("ports"), "")}
	}
	return nil
}

// ifSet: c, for a field that is set and not empty (an optional port,
// which c alone would take for 0 when unset; a string that its Go type
// stores as "" when unset).
func ifSet(c Check) Check {
	test := c.Test
	c.Test = func(p *field.Path, v any, present bool) field.ErrorList {
		if isEmpty(v, present) {
			return nil
		}
		return test(p, v, present)
	}
	return c
}

// unsetAs: c, seeing value as unset: what kube-apiserver's defaults made
// of an unset field before it validated (a Job's pods' restartPolicy
// Always).
func unsetAs(c Check, value any) Check {
	test := c.Test
	c.Test = func(p *field.Path, v any, present bool) field.ErrorList {
		if v == value {
			v = ""
		}
		return test(p, v, present)
	}
	return c
}

// eachOneOf: every element of a set list holds one of values; an error
// names the list (PersistentVolume access modes).
func eachOneOf(path string, values ...string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, _ bool) field.ErrorList {
		var errs field.ErrorList
		list, _ := v.([]any)
		for _, item := range list {
			if s, _ := item.(string); !slices.Contains(values, s) {
				errs = append(errs, field.NotSupported(p, item, values))
			}
		}
		return errs
	}}
}

// forbiddenAbove: a set integer is at most max, or the value is
// forbidden with msg (a PriorityClass's value).
func forbiddenAbove(path string, max int64, msg string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, _ bool) field.ErrorList {
		if n, ok := v.(int64); ok && n > max {
			return field.ErrorList{field.Forbidden(p, msg)}
		}
		return nil
	}}
}

// nonNegativeIntOrPercent: a set int-or-string is an integer of at least
// 0 or a percentage of at most 100%.
func nonNegativeIntOrPercent(path string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, _ bool) field.ErrorList {
		switch v := v.(type) {
		case int64:
			if v < 0 {
				return field.ErrorList{field.Invalid(p, v, "must be greater than or equal to 0")}
			}
		case string:
			if msgs := utilvalidation.IsValidPercent(v); len(msgs) > 0 {
				return field.ErrorList{field.Invalid(p, v, msgs[0])}
			}
			if n, _ := strconv.Atoi(strings.TrimSuffix(v, "%")); n > 100 {
				return field.ErrorList{field.Invalid(p, v, "must not be greater than 100%")}
			}
		}
		return nil
	}}
}

// goStruct renders obj as kube-apiserver shows a value of its internal Go
// type in a message: JSON with the struct's fields in order, named as in
// Go (goFields; each JSON name is its Go name with a lower-case initial),
// null when unset. Values below are shown as stored.
func goStruct(obj map[string]any, goFields ...string) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range goFields {
		if i > 0 {
			b.WriteByte(',')
		}
		v, _ := json.Marshal(obj[strings.ToLower(name[:1])+name[1:]])
		fmt.Fprintf(&b, "%q:%s", name, v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// notBoth: an object does not set both fields a and b; the error shows
// the object as its internal Go type does (goFields, see goStruct).
func notBoth(a, b, msg string, goFields ...string) Check {
	return Check{Object: func(p *field.Path, obj map[string]any) field.ErrorList {
		if obj[a] != nil && obj[b] != nil {
			return field.ErrorList{field.Invalid(p, goStruct(obj, goFields...), msg)}
		}
		return nil
	}}
}

// strategyType: a set update strategy's type is one of values, else the
// error bad makes of the strategy, shown as its internal Go type.
func strategyType(path string, bad errorOf, values ...string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, present bool) field.ErrorList {
		strategy, _ := v.(map[string]any)
		if t, _ := strategy["type"].(string); present && !slices.Contains(values, t) {
			return field.ErrorList{bad(p, goStruct(strategy, "Type", "RollingUpdate"))}
		}
		return nil
	}}
}

// requiredAny: an object sets at least one of fields; else the error
// missing makes of nil for the object.
func requiredAny(missing errorOf, fields ...string) Check {
	return Check{Object: func(p *field.Path, obj map[string]any) field.ErrorList {
		for _, f := range fields {
			if obj[f] != nil {
				return nil
			}
		}
		return field.ErrorList{missing(p, nil)}
	}}
}

// oneVolumeSource: an object sets exactly one of the volume source fields
// (in kube-apiserver's order: each after the first is forbidden).
func oneVolumeSource(fields []string) Check {
	return Check{Object: func(p *field.Path, obj map[string]any) field.ErrorList {
		var errs field.ErrorList
		found := false
		for _, f := range fields {
			if obj[f] == nil {
				continue
			}
			if found {
				errs = append(errs, field.Forbidden(p.Child(f), "may not specify more than 1 volume type"))
			}
			found = true
		}
		if !found {
			errs = append(errs, field.Required(p, "must specify a volume type"))
		}
		return errs
	}}
}

// capacity: a PersistentVolume's capacity is set and names storage only.
func capacity() Check {
	return Check{Path: "capacity", Test: func(p *field.Path, v any, _ bool) field.ErrorList {
		var errs field.ErrorList
		c, _ := v.(map[string]any)
		if len(c) == 0 {
			errs = append(errs, field.Required(p, ""))
		}
		if _, ok := c["storage"]; !ok || len(c) > 1 {
			errs = append(errs, field.NotSupported(p, c, []string{"storage"}))
		}
		return errs
	}}
}

// storageRequest: a PersistentVolumeClaim's spec requests storage.
func storageRequest() Check {
	return Check{Object: func(p *field.Path, spec map[string]any) field.ErrorList {
		resources, _ := spec["resources"].(map[string]any)
		requests, _ := resources["requests"].(map[string]any)
		if _, ok := requests["storage"]; !ok {
			return field.ErrorList{field.Required(p.Child("resources").Key("storage"), "")}
		}
		return nil
	}}
}

// ingressHost: a set host is a DNS subdomain, or a wildcard one, not an IP
// address.
func ingressHost(path string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, _ bool) field.ErrorList {
		host, _ := v.(string)
		if host == "" {
			return nil
		}
		var errs field.ErrorList
		if net.ParseIP(host) != nil {
			errs = append(errs, field.Invalid(p, host, "must be a DNS name, not an IP address"))
		}
		check := content.IsDNS1123Subdomain
		if strings.Contains(host, "*") {
			check = utilvalidation.IsWildcardDNS1123Subdomain
		}
		for _, msg := range check(host) {
			errs = append(errs, field.Invalid(p, host, msg))
		}
		return errs
	}}
}

// domainPrefixedPath: a set string is a domain-prefixed path
// ("example.com/controller").
func domainPrefixedPath(path string) Check {
	return Check{Path: path, Test: func(p *field.Path, v any, present bool) field.ErrorList {
		if s, _ := v.(string); s != "" {
			return utilvalidation.IsDomainPrefixedPath(p, s)
		}
		return nil
	}}
}
