package engine

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	vals := map[string]string{"q": "Why {a}?", "a": "A", "long name": "L"}
	tests := []struct {
		tmpl, single, either string
	}{
		{"Q: {q} A: {a}", "Q: Why {a}? A: A", "Q: Why {a}? A: A"}, // a value is not scanned again
		{"{{q}}", "{Why {a}?}", "Why {a}?"},
		{"{x} {a", "{x} {a", "{x} {a"},
		{"{}{{}}{a}}", "{}{{}}A}", "{}{{}}A}"},
		{"{{x}} {{a}", "{{x}} {A", "{{x}} {A"},
		{"{long name}{a}", "LA", "LA"},
		{"no braces", "no braces", "no braces"},
		{"", "", ""},
	}
	for _, tc := range tests {
		if got := Fill(tc.tmpl, vals); got != tc.single {
			t.Errorf("Fill(%q) = %q, want %q", tc.tmpl, got, tc.single)
		}
		if got := FillEither(tc.tmpl, vals); got != tc.either {
			t.Errorf("FillEither(%q) = %q, want %q", tc.tmpl, got, tc.either)
		}
	}
}

// Fill does what a strings.Replacer of the pairs "{name}" → value does
// ("{{name}}" first, for FillEither), on templates drawn from braces,
// names and text.
func TestFillAsReplacer(t *testing.T) {
	vals := map[string]string{"a": "<A{b}>", "b": "", "ab": "<AB>"}
	var single, either []string
	for k, v := range vals {
		single = append(single, "{"+k+"}", v)
		either = append(either, "{{"+k+"}}", v, "{"+k+"}", v)
	}
	rs, re := strings.NewReplacer(single...), strings.NewReplacer(either...)
	pieces := []string{"{", "}", "{{", "}}", "a", "b", "ab", " ", "x"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		tmpl := b.String()
		if got, want := Fill(tmpl, vals), rs.Replace(tmpl); got != want {
			t.Fatalf("Fill(%q) = %q, a Replacer gives %q", tmpl, got, want)
		}
		if got, want := FillEither(tmpl, vals), re.Replace(tmpl); got != want {
			t.Fatalf("FillEither(%q) = %q, a Replacer gives %q", tmpl, got, want)
		}
	}
}
