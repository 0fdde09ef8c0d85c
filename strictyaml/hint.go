package strictyaml

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// unknownField is the YAML decoder's message for a key its type has no
// field for.
var unknownField = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)

// unknownKeyMessage rewrites the decoder's "field replcia not found in type
// config.Target" as what a user can act on: the key, the closest key the
// mapping does take, and every key it takes. The keys come from the Go
// type decoded into (out), walked along the field's path; when the walk
// does not end at the type the decoder names (a type that decodes through
// another, such as an HTTP client's settings), the message is kept.
func unknownKeyMessage(msg string, out reflect.Type, path string) string {
	m := unknownField.FindStringSubmatch(msg)
	if m == nil || out == nil {
		return msg
	}
	key, typeName := m[1], m[2]
	parent := path
	if i := strings.LastIndexAny(path, ".["); i >= 0 && strings.HasSuffix(path, key) {
		parent = path[:i]
	} else if path == key {
		parent = ""
	}
	t, ok := typeAtPath(out, parent)
	if !ok || t.String() != typeName {
		return msg
	}
	keys := slices.Sorted(maps.Keys(yamlFields(t)))
	if len(keys) == 0 {
		return msg
	}
	text := fmt.Sprintf("unknown key %q", key)
	if near := closest(key, keys); near != "" {
		text += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return text + "; the keys here are " + strings.Join(keys, ", ")
}

// typeAtPath is the struct type a field path such as "targets[0].http_client"
// ends at, starting from t; "" is t itself.
func typeAtPath(t reflect.Type, path string) (reflect.Type, bool) {
	t = deref(t)
	if path == "" {
		return t, t.Kind() == reflect.Struct
	}
	for _, step := range strings.Split(path, ".") {
		key, indexes := splitIndexes(step)
		if key != "" {
			f, ok := yamlFields(t)[key]
			if !ok {
				// A map's keys are data: its values share one type.
				if t.Kind() != reflect.Map {
					return nil, false
				}
				f = t.Elem()
			}
			t = deref(f)
		}
		for range indexes {
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil, false
			}
			t = deref(t.Elem())
		}
	}
	return t, t.Kind() == reflect.Struct
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// yamlFields are the keys a struct type decodes, inline and embedded
// structs' included, each with the type it decodes into.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return fields
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline, ok := yamlName(f)
		switch {
		case !ok:
		case inline:
			maps.Copy(fields, yamlFields(deref(f.Type)))
		default:
			fields[name] = f.Type
		}
	}
	return fields
}

// yamlName is the key a struct field decodes from, as go.yaml.in/yaml/v3
// names it (its tag's name, else the field's name in lower case), whether
// it is inlined, and whether it is decoded at all.
func yamlName(f reflect.StructField) (name string, inline, ok bool) {
	if !f.IsExported() && !f.Anonymous { // yaml reads embedded structs, exported or not
		return "", false, false
	}
	tag := f.Tag.Get("yaml")
	if tag == "-" {
		return "", false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	inline = slices.Contains(strings.Split(opts, ","), "inline")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, inline, true
}

// closest is the key nearest to key by edit distance, when it is near
// enough to be a slip (at most a third of the key's length, at least 1),
// else "".
func closest(key string, keys []string) string {
	best, bestD := "", max(1, len(key)/3)+1
	for _, k := range keys {
		if d := editDistance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment) between a and b: a swapped pair of letters is one slip.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
