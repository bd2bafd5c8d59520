package engine

import (
	"embed"
	"strings"
)

// Fill substitutes {name} placeholders in a prompt template, as Python's
// str.format does for templates with no other braces: a brace that opens
// no name of vals is kept as it is, and a value is never scanned again.
func Fill(tmpl string, vals map[string]string) string { return fill(tmpl, vals, false) }

// FillEither is Fill for templates that write a placeholder {{name}} as
// well as {name} (the authors' code fills both forms).
func FillEither(tmpl string, vals map[string]string) string { return fill(tmpl, vals, true) }

// fill is one pass over tmpl: at each "{" it replaces "{{name}}" (when
// double) or "{name}" whose name vals holds. It does what a
// strings.Replacer of those pairs does, without building one per prompt
// (which cost a cached rerun of 10,000 prompts a tenth of a second).
func fill(tmpl string, vals map[string]string, double bool) string {
	var b strings.Builder
	b.Grow(len(tmpl))
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		b.WriteString(tmpl[:i])
		tmpl = tmpl[i:]
		if double && strings.HasPrefix(tmpl, "{{") {
			if end := strings.Index(tmpl, "}}"); end > 2 {
				if v, ok := vals[tmpl[2:end]]; ok {
					b.WriteString(v)
					tmpl = tmpl[end+2:]
					continue
				}
			}
		}
		if end := strings.IndexByte(tmpl, '}'); end > 1 {
			if v, ok := vals[tmpl[1:end]]; ok {
				b.WriteString(v)
				tmpl = tmpl[end+1:]
				continue
			}
		}
		b.WriteByte('{')
		tmpl = tmpl[1:]
	}
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
