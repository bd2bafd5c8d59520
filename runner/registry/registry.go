// Package registry lists halu's suites: one line per suite, each the
// suite package's Declaration (engine.Declaration). Commands find suites
// here — their flags, configs and how to build them — and a new suite is
// its package plus one line below.
package registry

import (
	"halu/runner/cfaith"
	"halu/runner/engine"
	"halu/runner/hic"
	"halu/runner/hypo"
	"halu/runner/ideas"
	"halu/runner/intent"
	"halu/runner/judgeval"
	"halu/runner/smoke"
)

// All are the declared suites, in the order commands list them.
func All() []engine.Declaration {
	return []engine.Declaration{
		smoke.Declaration,
		hic.Declaration,
		ideas.Declaration,
		hypo.Declaration,
		intent.Declaration,
		cfaith.Declaration,
		cfaith.BuildDeclaration,
		judgeval.Declaration,
	}
}

// Find is the suite named name.
func Find(name string) (engine.Declaration, bool) {
	for _, d := range All() {
		if d.Name == name {
			return d, true
		}
	}
	return engine.Declaration{}, false
}
