package wire

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// DecodeQuery reads r's query string into a T, a struct whose json tags
// name the parameters. The answers follow Decode's: a value of the wrong
// type or outside an enum, or a missing required parameter, is a 422
// whose errors name the parameter. Parameters T does not have are ignored.
// A list field takes every occurrence (?select=a&select=b); any other field
// takes the last. Booleans are 1/0/true/false (the SDK sends "1"/"0").
func DecodeQuery[T any](r *http.Request) (T, *Problem) {
	var out T
	return out, DecodeQueryInto(r, &out)
}

// DecodeQueryInto is DecodeQuery into dst, a non-nil pointer to a struct.
func DecodeQueryInto(r *http.Request, dst any) *Problem {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return NewProblem(http.StatusInternalServerError, fmt.Sprintf("decoding a query into %T: need a non-nil pointer to a struct", dst))
	}
	rv = rv.Elem()
	tree := queryTree(r.URL.Query(), rv.Type())
	d := &walker{}
	d.assignStruct("", tree, rv)
	if len(d.errs) == 0 {
		if v, ok := dst.(validator); ok {
			d.errs = v.Validate()
		}
	}
	if len(d.errs) == 0 {
		return nil
	}
	for i, e := range d.errs {
		name, _, _ := strings.Cut(strings.TrimPrefix(e.Pointer, "/"), "/")
		d.errs[i] = FieldError{Parameter: name, Detail: e.Detail}
	}
	return Invalid(d.errs...)
}

// queryTree turns the query into the parsed-JSON shape the walker assigns,
// typed by t's fields: numbers for integer fields, booleans for bool
// fields (a value that is neither stays a string, so the error names it).
func queryTree(q url.Values, t reflect.Type) map[string]any {
	tree := map[string]any{}
	info := fieldsOf(t)
	for _, f := range info.list {
		vals, ok := q[f.name]
		if !ok || len(vals) == 0 {
			continue
		}
		ft := t.Field(f.index).Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice && ft != rawType {
			list := make([]any, len(vals))
			for i, v := range vals {
				list[i] = queryScalar(v, ft.Elem())
			}
			tree[f.name] = list
			continue
		}
		tree[f.name] = queryScalar(vals[len(vals)-1], ft)
	}
	return tree
}

func queryScalar(v string, t reflect.Type) any {
	switch t.Kind() {
	case reflect.Bool:
		switch strings.ToLower(v) {
		case "1", "true":
			return true
		case "0", "false":
			return false
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return jsonNumber(v)
		}
	}
	return v
}
