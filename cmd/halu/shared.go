package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// The flags every suite shares are bound here, once, so that they are
// spelt alike everywhere: --models for the models under test, --judges for
// the judge models (a panel, or the one judge a paper uses). The old
// spelling --judge keeps working for a release, with a deprecation line.

// bindModels binds --models.
func bindModels(fs *pflag.FlagSet, dst *[]string, help string) {
	fs.StringSliceVar(dst, "models", nil, help)
}

// bindJudges binds --judges for a panel (and --judge, deprecated).
func bindJudges(fs *pflag.FlagSet, dst *[]string, help string) {
	fs.StringSliceVar(dst, "judges", nil, help)
	fs.StringSliceVar(dst, "judge", nil, help)
	fs.MarkDeprecated("judge", "use --judges")
}

// bindOneJudge binds --judges (and --judge, deprecated) for a suite whose
// paper uses one judge; the finish step it returns sets dst and refuses
// more than one.
func bindOneJudge(fs *pflag.FlagSet, suite string, dst *string, help string) func() error {
	var judges []string
	fs.StringSliceVar(&judges, "judges", nil, help+" (one model)")
	fs.StringSliceVar(&judges, "judge", nil, help)
	fs.MarkDeprecated("judge", "use --judges")
	return func() error {
		if !fs.Changed("judges") && !fs.Changed("judge") {
			return nil // a rerun keeps the run's judge
		}
		if len(judges) > 1 {
			return fmt.Errorf("%s: --judges %s: this suite takes one judge (the paper's setting); run once per judge and compare", suite, strings.Join(judges, ","))
		}
		*dst = ""
		if len(judges) == 1 {
			*dst = judges[0]
		}
		return nil
	}
}
