package engine

import (
	"embed"
	"strings"
)

// Fill substitutes {name} placeholders in a prompt template, as Python's
// str.format does for templates with no other braces.
func Fill(tmpl string, vals map[string]string) string {
	pairs := make([]string, 0, 2*len(vals))
	for k, v := range vals {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

// Embedded is the text of file name in fsys, a suite's prompts or data
// embedded at build time: a missing one is a build's fault, not a user's,
// so it panics.
func Embedded(fsys embed.FS, name string) string {
	b, err := fsys.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}
