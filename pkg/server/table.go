package server

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tableOptions is a request for meta.k8s.io Table output (kubectl get).
type tableOptions struct {
	apiVersion    string // meta.k8s.io/v1 or meta.k8s.io/v1beta1
	includeObject string // None, Metadata (default) or Object
}

// tableRequest returns the Table options when the Accept header's first
// media type that this server can produce is a Table; nil otherwise.
func tableRequest(r *http.Request) *tableOptions {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || (mt != "application/json" && mt != "*/*") {
			continue
		}
		if params["as"] != "Table" || params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
			return nil // plain JSON comes first
		}
		include := r.URL.Query().Get("includeObject")
		if include == "" {
			include = "Metadata"
		}
		return &tableOptions{apiVersion: "meta.k8s.io/" + params["v"], includeObject: include}
	}
	return nil
}

// tableColumns are the columns of every resource's table: NAME and AGE,
// as kubectl prints them for custom resources.
const tableColumns = `[{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.","priority":0},` +
	`{"name":"Age","type":"string","format":"","description":"CreationTimestamp is a timestamp representing the server time when this object was created.","priority":0}]`

// appendTable appends a Table of items; list, if not nil, gives the
// table's list metadata.
func (t *tableOptions) appendTable(buf []byte, res *resource.Resource, items []*object.Object, list *storage.List) []byte {
	buf = append(buf, `{"kind":"Table","apiVersion":"`...)
	buf = append(buf, t.apiVersion...)
	buf = append(buf, `","metadata":`...)
	if list != nil {
		meta := map[string]any{"resourceVersion": storage.FormatResourceVersion(list.ResourceVersion)}
		if list.Continue != "" {
			meta["continue"] = list.Continue
		}
		if list.RemainingItemCount != nil {
			meta["remainingItemCount"] = *list.RemainingItemCount
		}
		data, _ := json.Marshal(meta)
		buf = append(buf, data...)
	} else {
		buf = append(buf, "{}"...)
	}
	buf = append(buf, `,"columnDefinitions":`...)
	buf = append(buf, tableColumns...)
	buf = append(buf, `,"rows":[`...)
	now := time.Now()
	for i, obj := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = t.appendRow(buf, obj, now)
	}
	return append(buf, "]}"...)
}

func (t *tableOptions) appendRow(buf []byte, obj *object.Object, now time.Time) []byte {
	var meta struct {
		CreationTimestamp time.Time `json:"creationTimestamp"`
	}
	json.Unmarshal(obj.AppendMetadata(nil), &meta)
	age := "<unknown>"
	if !meta.CreationTimestamp.IsZero() {
		age = duration.HumanDuration(now.Sub(meta.CreationTimestamp))
	}
	cells, _ := json.Marshal([]string{obj.Name(), age})
	buf = append(buf, `{"cells":`...)
	buf = append(buf, cells...)
	switch t.includeObject {
	case "Object":
		buf = append(buf, `,"object":`...)
		buf = obj.AppendJSON(buf)
	case "None":
	default:
		buf = append(buf, `,"object":{"kind":"PartialObjectMetadata","apiVersion":"`...)
		buf = append(buf, t.apiVersion...)
		buf = append(buf, `","metadata":`...)
		buf = obj.AppendMetadata(buf)
		buf = append(buf, '}')
	}
	return append(buf, '}')
}
