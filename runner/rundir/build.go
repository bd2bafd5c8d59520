package rundir

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"halu/localmodels"
)

// Build identifies the halu binary that runs by content: its version (the
// -X main.version it was built with), the VCS revision (stamped by the Go
// toolchain, or passed by the Makefile as -X main.revision where
// -buildvcs=false), and the sha256 of the executable itself, so that two
// builds of one version — other commits, or a tree with uncommitted
// changes — are told apart in every manifest and session.
func Build(version, revision string) string {
	rev := revision
	if info, ok := debug.ReadBuildInfo(); ok && rev == "" {
		modified := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && modified {
			rev += "+modified"
		}
	}
	var parts []string
	if rev != "" {
		parts = append(parts, "rev "+rev)
	}
	if sum := executableSum(); sum != "" {
		parts = append(parts, "binary sha256 "+sum)
	}
	if len(parts) == 0 {
		return version
	}
	return version + " (" + strings.Join(parts, ", ") + ")"
}

// StartBuild is Build begun at once, in the background: hashing the
// executable (tens of milliseconds for halu's) overlaps what a command
// does before it needs its build — a suite reading its data. The function
// returned waits for it, and gives the same string every call.
func StartBuild(version, revision string) func() string {
	ch := make(chan string, 1)
	go func() { ch <- Build(version, revision) }()
	return sync.OnceValue(func() string { return <-ch })
}

// executableSum is the first 12 hex digits of the running executable's
// sha256 ("" when it cannot be read).
func executableSum() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	h, err := HashFile(p)
	if err != nil || len(h) < 12 {
		return ""
	}
	return h[:12]
}

// FingerprintDiff lists, model by model, how the serving fingerprints b
// differ from a (the same model served from other weights, template,
// quantization, server version, context window or API): the digests on
// both sides are named. A model in one list and not the other is a
// difference too.
func FingerprintDiff(a, b []Fingerprint) []string {
	key := func(f Fingerprint) string { return f.Model }
	bs := map[string]Fingerprint{}
	for _, f := range b {
		bs[key(f)] = f
	}
	var out []string
	seen := map[string]bool{}
	for _, fa := range a {
		seen[key(fa)] = true
		fb, ok := bs[key(fa)]
		if !ok {
			out = append(out, fmt.Sprintf("%s: not served now", fa.Model))
			continue
		}
		var what []string
		add := func(name, x, y string) {
			if x != y {
				what = append(what, fmt.Sprintf("%s %s → %s", name, orNone(x), orNone(y)))
			}
		}
		add("digest", fa.Digest, fb.Digest)
		add("quantization", fa.Quantization, fb.Quantization)
		add("template", localmodels.ShortDigest(fa.Template), localmodels.ShortDigest(fb.Template))
		add("server version", fa.ServerVersion, fb.ServerVersion)
		add("context", fmt.Sprint(fa.NumCtx), fmt.Sprint(fb.NumCtx))
		add("API", fa.API, fb.API)
		add("weights", fa.Weights, fb.Weights)
		add("identity", fa.Identity, fb.Identity)
		switch {
		case len(what) == 0:
		case fa.Digest != fb.Digest:
			out = append(out, fmt.Sprintf("%s: %s", fa.Model, strings.Join(what, ", ")))
		default:
			out = append(out, fmt.Sprintf("%s: %s (the same digest %s)", fa.Model, strings.Join(what, ", "), orNone(fa.Digest)))
		}
	}
	for _, fb := range b {
		if !seen[key(fb)] {
			out = append(out, fmt.Sprintf("%s: not in the run before", fb.Model))
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
