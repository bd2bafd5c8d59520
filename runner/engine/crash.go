package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"halu/localmodels"
)

// ErrServerDied is a call during which the model server went away: its
// reply was cut and nothing listens at its address any more (it crashed or
// was stopped), or the server said the model's runner terminated.
// Retrying would only wait for nothing, or meet the same crash (a model
// that aborts the server aborts it again), so the call is not repeated and
// the run stops naming the model and the call, with the crash's lines from
// the server's log when halu started the server.
var ErrServerDied = errors.New("the model server went away during this call")

// ServerLogEnv names a file holding the log of a server halu started
// itself (`halu with-ollama` sets it for its command): a crash's lines are
// quoted from it.
const ServerLogEnv = "HALU_SERVER_LOG"

// runnerDied matches what Ollama answers when the model's runner stopped
// during a call (the server survived it).
var runnerDied = regexp.MustCompile(`(?i)runner process (has terminated|no longer running)|llama runner.*(terminated|exited)`)

// died decides whether err, the failure of a call, is the server (or the
// model's runner) crashing under it: a 5xx naming the runner's end, or a
// reply cut mid-way (EOF, connection reset) after which nothing answers at
// the server's address. It returns the error to report (wrapping
// ErrServerDied, with the crash's lines from the server's log when halu
// started the server), or nil when err is no crash.
func (e *Engine) died(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return nil
	}
	msg := err.Error()
	if runnerDied.MatchString(msg) {
		return fmt.Errorf("%w: the server says the model's runner terminated — it crashed on this model (%v)%s", ErrServerDied, err, e.crashLines())
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return nil // it never connected: a server that is down, not one that died under the call
	}
	if !(strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset")) {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, perr := e.Client.Version(pctx)
	cancel()
	if perr == nil || !localmodels.IsUnreachable(perr) || ctx.Err() != nil {
		return nil // the server is still there: a dropped connection, retried
	}
	lines := e.crashLines()
	why := "it crashed or was stopped (its log says which)"
	if lines != "" {
		why = "it crashed"
	}
	return fmt.Errorf("%w: the reply was cut and nothing answers at %s now, unreachable (%v): %s%s; not retried — a model that crashes the server crashes it again", ErrServerDied, e.Client.Host(), perr, why, lines)
}

// crashPattern picks a crash's lines out of a server log: the C++ abort,
// Go's fatal errors and signals, and llama.cpp's own errors.
var crashPattern = regexp.MustCompile(`terminate called|what\(\):|SIG(ABRT|SEGV|BUS|ILL|FPE)|^panic:|fatal error:|GGML_ASSERT|error loading model|out of memory|CUDA error`)

// crashLines are the crash's lines from the log of a server halu started
// (ServerLogEnv), at most 8 from its last 256 KiB, as a sentence tail ("";
// when there is no such log, or it names no crash).
func (e *Engine) crashLines() string {
	path := e.ServerLog
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 256<<10 {
		f.Seek(fi.Size()-256<<10, io.SeekStart)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if crashPattern.MatchString(l) && len(lines) < 8 {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("; the server's log (%s) says: %s", path, strings.Join(lines, " | "))
}
