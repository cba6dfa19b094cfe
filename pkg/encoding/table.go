// meta.k8s.io Table output (kubectl get): the Accept header's request for a
// Table, the columns of built-in and custom resources, and a Table's rows.

package encoding

import (
	"bufio"
	"net/http"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/conversion"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TableOptions is a request for meta.k8s.io Table output (kubectl get).
type TableOptions struct {
	apiVersion    string // meta.k8s.io/v1 or meta.k8s.io/v1beta1
	includeObject string // None, Metadata (default) or Object
	// noHeaders leaves the column definitions out, as kube-apiserver does
	// in a watch's events after the first.
	noHeaders bool
}

// tableOptions are the options of a Table of meta.k8s.io version that r
// asks for (its includeObject parameter).
func tableOptions(r *http.Request, version string) *TableOptions {
	include := r.URL.Query().Get("includeObject")
	if include == "" {
		include = "Metadata"
	}
	return &TableOptions{apiVersion: metav1.GroupName + "/" + version, includeObject: include}
}

// AppendTable appends a Table of items with the resource's columns; list,
// if not nil, gives the table's list metadata.
func (t *TableOptions) AppendTable(buf []byte, res *resource.Resource, items []*object.Object, list *storage.List) []byte {
	columns, stored := tableColumns(res)
	buf = t.appendTableOpen(buf, columns, list)
	now := time.Now()
	for i, obj := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = t.appendRow(buf, columns, obj, stored(obj), now)
	}
	return append(buf, "]}"...)
}

// TableList is the encoding of a list as a Table, one row per item.
func (t *TableOptions) TableList(res *resource.Resource) ListEncoding {
	columns, stored := tableColumns(res)
	now := time.Now()
	var row []byte
	return ListEncoding{
		open: func(bw *bufio.Writer, list *storage.List) { bw.Write(t.appendTableOpen(nil, columns, list)) },
		item: func(bw *bufio.Writer, obj *object.Object) {
			row = t.appendRow(row[:0], columns, obj, stored(obj), now)
			bw.Write(row)
		},
		close: "]}",
	}
}

// appendTableOpen appends a Table up to its first row: list, if not nil,
// gives its list metadata.
func (t *TableOptions) appendTableOpen(buf []byte, columns table.Printer, list *storage.List) []byte {
	buf = append(buf, `{"kind":"Table","apiVersion":"`...)
	buf = append(buf, t.apiVersion...)
	buf = append(buf, `","metadata":`...)
	if list != nil {
		buf = appendListMeta(buf, list)
	} else {
		buf = append(buf, "{}"...)
	}
	buf = append(buf, `,"columnDefinitions":`...)
	if t.noHeaders {
		buf = append(buf, "null"...)
	} else {
		buf = columns.AppendColumns(buf)
	}
	return append(buf, `,"rows":[`...)
}

// customPrinters are the printers of custom resources with printer
// columns, compiled once per resource (a changed definition registers new
// resources).
var customPrinters sync.Map // *resource.Resource → table.Printer

// tableColumns returns a resource's columns and the JSON its cells are
// computed from: the object's, or for a resource served in another
// version than it is stored in (events.k8s.io/v1 events), the stored
// version's columns and the object converted back to that version.
func tableColumns(res *resource.Resource) (table.Printer, func(*object.Object) []byte) {
	if len(res.PrinterColumns) > 0 {
		if p, ok := customPrinters.Load(res); ok {
			return p.(table.Printer), (*object.Object).Stored
		}
		if p, err := table.ForColumns(res.PrinterColumns); err == nil {
			customPrinters.Store(res, p)
			return p, (*object.Object).Stored
		}
	}
	if res.StoredWith == nil || res.Definition != "" {
		return table.For(res.Group, res.Plural), (*object.Object).Stored
	}
	c := conversion.For(res.Group, res.Version, res.Kind)
	return table.For(res.StoredWith.Group, res.StoredWith.Plural), func(o *object.Object) []byte {
		data, err := c.ToStorage(o.Stored())
		if err != nil {
			return o.Stored() // its cells are empty
		}
		return data
	}
}

// appendRow appends obj's row, its cells computed from cellJSON.
func (t *TableOptions) appendRow(buf []byte, columns table.Printer, obj *object.Object, cellJSON []byte, now time.Time) []byte {
	buf = append(buf, `{"cells":`...)
	buf = columns.AppendCells(buf, cellJSON, now)
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
