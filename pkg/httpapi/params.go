// The query of a list or watch: selectors (field labels checked per
// resource), resourceVersion and its match, limit, continue, timeouts,
// sendInitialEvents, shardSelector, and a watch narrowed to one name.

package httpapi

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// listParams are the query parameters of list and watch requests.
type listParams struct {
	opts storage.ListOptions
	// timeoutSeconds bounds a watch (0: the server's default).
	timeoutSeconds int64
}

// fieldLabelConversion checks a field selector's labels as kube-apiserver
// converts them: metadata.name, metadata.namespace and res's selectable
// fields, renamed to the labels of the store that evaluates them.
func fieldLabelConversion(res *resource.Resource) fields.TransformFunc {
	return func(label, value string) (string, string, error) {
		switch {
		case label == "metadata.name" || label == "metadata.namespace":
			return label, value, nil
		case !slices.Contains(res.SelectableFields, label):
			return "", "", fmt.Errorf(res.FieldLabelError, label)
		case res.FieldLabels[label] != "":
			return res.FieldLabels[label], value, nil
		}
		return label, value, nil
	}
}

// parseListParams parses and checks the query of a list or watch. The
// option combinations are validated later by the storage tables.
// shardSelector is read only if sharding (the ShardedListAndWatch gate)
// is on; it is ignored otherwise, as a server without the feature does.
func parseListParams(q url.Values, res *resource.Resource, sharding bool) (*listParams, *apierrors.StatusError) {
	p := &listParams{}
	p.opts.ResourceVersion = q.Get("resourceVersion")
	p.opts.ResourceVersionMatch = metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))
	p.opts.Continue = q.Get("continue")
	var err *apierrors.StatusError
	if p.opts.Limit, err = intParam(q, "limit"); err != nil {
		return nil, err
	}
	if p.timeoutSeconds, err = intParam(q, "timeoutSeconds"); err != nil {
		return nil, err
	}
	if p.opts.Limit < 0 || p.timeoutSeconds < 0 {
		return nil, apistatus.BadRequest("limit and timeoutSeconds must not be negative")
	}
	if s := q.Get("labelSelector"); s != "" {
		sel, perr := labels.Parse(s)
		if perr != nil {
			return nil, apistatus.BadRequest("unable to parse requirement: invalid labelSelector %q: %v", s, perr)
		}
		p.opts.Labels = sel
	}
	if s := q.Get("fieldSelector"); s != "" {
		sel, perr := fields.ParseSelector(s)
		if perr != nil {
			return nil, apistatus.BadRequest("invalid fieldSelector %q: %v", s, perr)
		}
		if sel, perr = sel.Transform(fieldLabelConversion(res)); perr != nil {
			return nil, apistatus.BadRequest("%v", perr)
		}
		p.opts.Fields = sel
	}
	if s := q.Get("shardSelector"); s != "" && sharding {
		sel, perr := storage.ParseShardSelector(s)
		if perr != nil {
			return nil, apistatus.BadRequest("invalid shard selector: %v", perr)
		}
		p.opts.Shard = sel
	}
	if p.opts.AllowWatchBookmarks, err = boolParam(q, "allowWatchBookmarks"); err != nil {
		return nil, err
	}
	if q.Has("sendInitialEvents") {
		v, err := boolParam(q, "sendInitialEvents")
		if err != nil {
			return nil, err
		}
		p.opts.SendInitialEvents = &v
	}
	return p, nil
}

func intParam(q url.Values, name string) (int64, *apierrors.StatusError) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, apistatus.BadRequest("invalid %s %q: must be an integer", name, s)
	}
	return v, nil
}

func boolParam(q url.Values, name string) (bool, *apierrors.StatusError) {
	switch s := q.Get(name); s {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, apistatus.BadRequest("invalid %s %q: must be true or false", name, s)
	}
}

// withNameSelector narrows options to one object name (a watch on an
// object's path).
func withNameSelector(opts storage.ListOptions, name string) storage.ListOptions {
	byName := fields.OneTermEqualSelector("metadata.name", name)
	if opts.Fields == nil || opts.Fields.Empty() {
		opts.Fields = byName
	} else {
		opts.Fields = fields.AndSelectors(opts.Fields, byName)
	}
	return opts
}
