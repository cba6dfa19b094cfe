// Printer, and the printer of a custom resource's additionalPrinterColumns
// (JSONPath columns), as apiextensions-apiserver's tableconvertor.

package table

import (
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/util/jsonpath"
)

// Printer prints a resource's rows: a built-in kind's Table, or a custom
// resource's printer columns.
type Printer interface {
	// AppendColumns appends the columnDefinitions, a JSON array.
	AppendColumns(buf []byte) []byte
	// AppendCells appends the cells of one object's row, given its JSON,
	// as a JSON array; ages are measured to now.
	AppendCells(buf, obj []byte, now time.Time) []byte
}

// customNameDescription is the Name column's description in a custom
// resource's table, as kube-apiserver gives it.
const customNameDescription = "Name must be unique within a namespace. Is required when creating resources, although some resources " +
	"may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation " +
	"idempotence and configuration definition. Cannot be updated. More info: " +
	"https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"

// ForColumns returns the printer of a custom resource with additional
// printer columns, as kube-apiserver prints it: Name, then each column,
// its cell the first value its JSONPath finds (a date shown as an age).
// A resource without columns is printed by For's Name and Age.
func ForColumns(defs []apiextensionsv1.CustomResourceColumnDefinition) (Printer, error) {
	p := &customPrinter{}
	type definition struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Format      string `json:"format"`
		Description string `json:"description"`
		Priority    int32  `json:"priority"`
	}
	out := []definition{{Name: "Name", Type: "string", Format: "name", Description: customNameDescription}}
	for _, d := range defs {
		jp := jsonpath.New(d.Name).AllowMissingKeys(true)
		if err := jp.Parse(fmt.Sprintf("{%s}", d.JSONPath)); err != nil {
			return nil, fmt.Errorf("printer column %s: %w", d.Name, err)
		}
		description := d.Description
		if description == "" {
			description = "Custom resource definition column (in JSONPath format): " + d.JSONPath
		}
		out = append(out, definition{Name: d.Name, Type: d.Type, Format: d.Format, Description: description, Priority: d.Priority})
		p.columns = append(p.columns, customColumn{typ: d.Type, path: jp})
	}
	p.definitions, _ = json.Marshal(out)
	return p, nil
}

// customPrinter prints a custom resource's printer columns.
type customPrinter struct {
	definitions []byte
	columns     []customColumn
}

type customColumn struct {
	typ  string
	path *jsonpath.JSONPath
}

func (p *customPrinter) AppendColumns(buf []byte) []byte { return append(buf, p.definitions...) }

func (p *customPrinter) AppendCells(buf, obj []byte, now time.Time) []byte {
	var o map[string]any
	json.Unmarshal(obj, &o)
	meta, _ := o["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	buf = append(buf, '[')
	buf = appendString(buf, name)
	for _, c := range p.columns {
		buf = append(buf, ',')
		buf = appendCustomValue(buf, c.value(o, now))
	}
	return append(buf, ']')
}

// value is the column's cell of object o.
func (c customColumn) value(o map[string]any, now time.Time) any {
	results, err := c.path.FindResults(o)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	v := results[0][0].Interface()
	switch c.typ {
	case "date":
		s, _ := v.(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return s
		}
		return since(t, now)
	case "integer":
		if f, ok := v.(float64); ok {
			return int64(f)
		}
	case "string":
		if _, ok := v.(string); !ok {
			data, _ := json.Marshal(v)
			return string(data)
		}
	}
	return v
}

// appendCustomValue appends a custom cell's value (any JSON value).
func appendCustomValue(buf []byte, v any) []byte {
	switch v.(type) {
	case string, int64, bool, nil:
		return appendValue(buf, v)
	}
	data, _ := json.Marshal(v)
	return append(buf, data...)
}
