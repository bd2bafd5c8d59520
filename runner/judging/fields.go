package judging

import (
	"reflect"
	"strings"
)

// requiredFields lists the JSON names of v's struct fields that are not
// marked omitempty: those a judge reply must contain.
func requiredFields(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if strings.Contains(opts, "omitempty") {
			continue
		}
		out = append(out, name)
	}
	return out
}
