package setting

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// RunFile is a YAML run file that gives every setting of lists its value
// (flag names as keys, in the declared order), for `halu run -f`: the
// suite's name first when suite is not empty.
func RunFile(suite string, lists ...List) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	scalar := func(s string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: yaml.DoubleQuotedStyle}
	}
	if suite != "" {
		add("suite", &yaml.Node{Kind: yaml.ScalarNode, Value: suite})
	}
	seen := map[string]bool{}
	for _, l := range lists {
		for _, s := range l {
			if seen[s.Name] || s.internal {
				continue
			}
			seen[s.Name] = true
			switch v := s.Value.(type) {
			case *pairs:
				seq := &yaml.Node{Kind: yaml.SequenceNode}
				for _, kv := range splitNonEmpty(v.String(), ",") {
					seq.Content = append(seq.Content, scalar(kv))
				}
				add(s.Name, seq)
			case *groups:
				seq := &yaml.Node{Kind: yaml.SequenceNode}
				for _, g := range *v.p {
					inner := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
					for _, m := range g {
						inner.Content = append(inner.Content, scalar(m))
					}
					seq.Content = append(seq.Content, inner)
				}
				add(s.Name, seq)
			default:
				if s.Value.Items() != nil && (s.Value.Type() == "stringSlice" || s.Value.Type() == "float64Slice") {
					seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
					for _, x := range s.Value.Items() {
						seq.Content = append(seq.Content, scalar(x))
					}
					add(s.Name, seq)
					continue
				}
				add(s.Name, scalar(s.Value.String()))
			}
		}
	}
	return yaml.Marshal(doc)
}

func splitNonEmpty(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
