package hicjudge

import (
	"strings"
	"testing"
)

func TestParseVerdictTextCorpus(t *testing.T) {
	ok := map[string]Verdict{
		"Originality: 4 Feasibility: 3 Value: 4 Hallucination: No":                                   {4, 3, 4, false},
		"originality:2 feasibility:5 value:1 hallucination:yes":                                      {2, 5, 1, true},
		"'Originality: [3] Feasibility: [4] Value: [2] Hallucination: Yes'.":                         {3, 4, 2, true},
		"**Originality**: 5 **Feasibility**: 2 **Value**: 5 **Hallucination**: No":                   {5, 2, 5, false},
		"Here is my evaluation.\nOriginality: 3\nFeasibility: 4\nValue: 3\nHallucination: No":        {3, 4, 3, false},
		"ORIGINALITY - 1, FEASIBILITY - 1, VALUE - 1, HALLUCINATION - YES. The answer is off-topic.": {1, 1, 1, true},
	}
	for reply, want := range ok {
		got, err := ParseVerdictText(reply)
		if err != nil || got != want {
			t.Errorf("ParseVerdictText(%q) = %+v, %v; want %+v", reply, got, err, want)
		}
	}
	bad := map[string]string{
		"Originality: 4 Feasibility: 3 Value: 4":                                   "no hallucination",
		"Originality: 6 Feasibility: 3 Value: 4 Hallucination: No":                 "outside 1..5",
		"Originality: 4 Feasibility: 3 Value: 4 Hallucination: Maybe":              "no hallucination",
		"I cannot evaluate this answer.":                                           "no originality",
		"Originality: 4 Feasibility: 3 Value: 4 Hallucination: No. Originality: 2": "two different",
		"": "no originality",
	}
	for reply, want := range bad {
		if _, err := ParseVerdictText(reply); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseVerdictText(%q) error %v, want %q", reply, err, want)
		}
	}
}
