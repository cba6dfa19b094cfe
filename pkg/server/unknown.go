package server

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// dropUnknownFields removes from obj, in place, the fields that the JSON
// encoding of Go type t does not have, at every depth: what kube-apiserver's
// decoding into the kind's Go type drops (the fieldValidation modes Warn and
// Ignore keep the write). Writes decode into maps here, so a body's unknown
// field reaches the steps before the final encoding, managedFields among
// them, whose schema does not have it either. Values of types that decode
// themselves (quantities, times, int-or-string, raw extensions) are left
// as they are.
func dropUnknownFields(obj any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := obj.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFieldsOf(t)
		for name, v := range m {
			ft, known := fields[name]
			if !known {
				delete(m, name)
				continue
			}
			dropUnknownFields(v, ft)
		}
	case reflect.Map:
		if m, ok := obj.(map[string]any); ok {
			for _, v := range m {
				dropUnknownFields(v, t.Elem())
			}
		}
	case reflect.Slice, reflect.Array:
		if list, ok := obj.([]any); ok {
			for _, v := range list {
				dropUnknownFields(v, t.Elem())
			}
		}
	}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports whether t (or *t) has its own JSON decoding.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// jsonFieldTypes caches jsonFieldsOf: reflect.Type → map[string]reflect.Type.
var jsonFieldTypes sync.Map

// jsonFieldsOf maps the JSON names of struct t's fields (those of embedded
// structs without a name of their own included, as encoding/json does) to
// their types.
func jsonFieldsOf(t reflect.Type) map[string]reflect.Type {
	if cached, ok := jsonFieldTypes.Load(t); ok {
		return cached.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case name == "" && f.Anonymous:
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, typ := range jsonFieldsOf(ft) {
					fields[n] = typ
				}
			}
		case !f.IsExported():
		case name == "":
			fields[f.Name] = f.Type
		default:
			fields[name] = f.Type
		}
	}
	jsonFieldTypes.Store(t, fields)
	return fields
}
