package engine

import "strings"

// Fill substitutes {name} placeholders in a prompt template, as Python's
// str.format does for templates with no other braces.
func Fill(tmpl string, vals map[string]string) string {
	pairs := make([]string, 0, 2*len(vals))
	for k, v := range vals {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}
