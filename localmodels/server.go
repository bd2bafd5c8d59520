package localmodels

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Server is an `ollama serve` process halu started itself, on a free
// loopback port with its own models directory: for the demo, the end-to-end
// tests and CI, never for a user's own server.
type Server struct {
	Host      string // 127.0.0.1:PORT
	ModelsDir string
	cmd       *exec.Cmd
	done      chan struct{}
	waitErr   error
}

// ServerConfig says which binary to run and where its models live.
type ServerConfig struct {
	Bin       string    // path to the ollama binary
	ModelsDir string    // OLLAMA_MODELS
	Port      int       // 0 picks a free port
	Log       io.Writer // server output; nil discards it
	Env       []string  // extra environment, KEY=VALUE
}

// StartServer starts `ollama serve` and waits until it answers /api/version.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	port := cfg.Port
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("start ollama: %w", err)
		}
		port = p
	}
	if err := os.MkdirAll(cfg.ModelsDir, 0o755); err != nil {
		return nil, fmt.Errorf("start ollama: %w", err)
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(cfg.Bin, "serve")
	cmd.Env = append(os.Environ(), "OLLAMA_HOST="+host, "OLLAMA_MODELS="+cfg.ModelsDir, "OLLAMA_NOPRUNE=1")
	cmd.Env = append(cmd.Env, cfg.Env...)
	if cfg.Log != nil {
		cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	}
	// Own process group, so stopping it also stops its model runners.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ollama %s: %w", cfg.Bin, err)
	}
	s := &Server{Host: host, ModelsDir: cfg.ModelsDir, cmd: cmd, done: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.done) }()

	c, err := New(host, 2*time.Second)
	if err != nil {
		s.Stop()
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := c.Version(ctx); err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("ollama serve exited before answering: %v", s.waitErr)
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("ollama serve on %s did not answer within 60s", host)
		}
	}
}

// Stop ends the server and its runners: SIGTERM, then SIGKILL after 10s.
func (s *Server) Stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	pgid := -s.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-s.done
	}
	// Runners may outlive the server in their own groups; the group kill
	// above reaches those started as children.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}

// Kill ends the server and the runners in its process group at once
// (SIGKILL), as a machine that dies would: no request gets an answer.
func (s *Server) Kill() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
