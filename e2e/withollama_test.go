//go:build e2e

package e2e

import (
	"strconv"
	"strings"
	"testing"
)

// with-ollama passes its command's exit status on: a gate failure (3) or
// an interrupt (130) must not read as a run error (1) in CI; the server
// is stopped either way.
func TestWithOllamaExitCode(t *testing.T) {
	for _, code := range []string{"0", "3", "7", "130"} {
		r := halu(t, "127.0.0.1:1", "with-ollama", "--bin", ollamaBin, "--", "sh", "-c", `test -n "$OLLAMA_HOST" || exit 99; exit `+code)
		if want, _ := strconv.Atoi(code); r.code != want {
			t.Errorf("exit %s: with-ollama exited %d\n%s", code, r.code, r.stderr)
		}
		if code != "0" && !strings.Contains(r.stderr, "exit status "+code) {
			t.Errorf("exit %s: stderr does not say so: %s", code, r.stderr)
		}
	}
}
