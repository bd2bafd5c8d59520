// Package localmodels talks to local model servers: chat generation,
// schema-constrained judge calls, embeddings, model metadata and model
// management (list, pull, import of GGUF files, the tiny test model).
// Backend is the seam the engine uses; its implementations are Client
// (Ollama's native API, the default), OpenAI (any OpenAI-compatible server:
// vLLM, llama-server, Ollama's /v1) and Pool (several servers as one).
//
// Every model call halu makes goes through this package, so it is the one
// place that knows the servers' wire formats and their quirks. Ollama's:
// options are sent as a map (api.Options drops temperature 0), digests come
// from List, and the HTTP client carries its own timeout
// (api.ClientFromEnvironment has none).
package localmodels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

// DefaultHost is the Ollama address used when neither --ollama nor
// OLLAMA_HOST says otherwise.
const DefaultHost = "127.0.0.1:11434"

// Client is a connection to one Ollama server.
type Client struct {
	api  *api.Client
	base *url.URL
	// http is the client api uses, for the streamed chat halu reads
	// itself (chatStream).
	http *http.Client
}

// HostFromEnv returns OLLAMA_HOST, or DefaultHost when it is unset.
func HostFromEnv() string {
	if h := strings.TrimSpace(os.Getenv("OLLAMA_HOST")); h != "" {
		return h
	}
	return DefaultHost
}

// ParseHost turns an Ollama host as users write it ("127.0.0.1:11434",
// ":11434", "localhost", "http://host:port") into a base URL.
func ParseHost(host string) (*url.URL, error) {
	host = strings.TrimSpace(host)
	if host == "" {
		host = DefaultHost
	}
	scheme := "http"
	if i := strings.Index(host, "://"); i >= 0 {
		scheme, host = host[:i], host[i+3:]
	}
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("ollama host %q: scheme must be http or https", host)
	}
	host = strings.TrimRight(host, "/")
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		// No port given.
		h, port = host, "11434"
	}
	if h == "" {
		h = "127.0.0.1"
	}
	if port == "" {
		return nil, fmt.Errorf("ollama host %q: empty port", host)
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(h, port)}, nil
}

// New returns a client for the Ollama server at host. timeout bounds every
// HTTP exchange (a whole generation included); zero means no limit, which
// only makes sense when ctx carries a deadline.
func New(host string, timeout time.Duration) (*Client, error) {
	base, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil, // prompts never go through a proxy
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: minIdle,
			IdleConnTimeout:     90 * time.Second,
		},
	}
	return &Client{api: api.NewClient(base, hc), base: base, http: hc}, nil
}

// Host returns the server address, host:port.
func (c *Client) Host() string { return c.base.Host }

// URL returns the server's base URL.
func (c *Client) URL() string { return c.base.String() }

// IsLoopback reports whether the server is on this machine. A server
// elsewhere means prompts and answers cross the network.
func (c *Client) IsLoopback() bool { return isLoopback(c.base) }

// isLoopback reports whether u names this machine.
func isLoopback(u *url.URL) bool {
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Version returns the server's version string.
func (c *Client) Version(ctx context.Context) (string, error) {
	v, err := c.api.Version(ctx)
	if err != nil {
		return "", c.wrap("version", err)
	}
	return v, nil
}

// API exposes the underlying Ollama client for calls this package does not wrap.
func (c *Client) API() *api.Client { return c.api }

// wrap adds the host and the operation to an error and turns a refused
// connection into advice.
func (c *Client) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if IsUnreachable(err) {
		return fmt.Errorf("ollama %s: %s: %w (is the server running? try `halu doctor`)", c.base.Host, op, err)
	}
	return fmt.Errorf("ollama %s: %s: %w", c.base.Host, op, err)
}

// IsUnreachable reports whether err means the server could not be reached at
// all (refused or failed connection), as opposed to an error it answered with.
func IsUnreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var se api.StatusError
	if errors.As(err, &se) {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "connection refused") || strings.Contains(s, "connection reset") ||
		strings.Contains(s, "EOF") && strings.Contains(s, "Post ")
}

// StatusCode returns the HTTP status Ollama answered with, or 0.
func StatusCode(err error) int {
	var se api.StatusError
	if errors.As(err, &se) {
		return se.StatusCode
	}
	return 0
}

// IsTransient reports whether a call that failed with err may succeed when
// repeated: the server was unreachable, timed out, answered 5xx or 429, or its
// model runner stopped. Client errors (4xx: unknown model, bad request) are
// final.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, ErrIncomplete) || errors.Is(err, ErrNoServer) {
		return true
	}
	if IsUnreachable(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	if code := StatusCode(err); code != 0 {
		return code >= 500 || code == http.StatusTooManyRequests
	}
	s := err.Error()
	return strings.Contains(s, "unexpectedly stopped") || strings.Contains(s, "timeout") ||
		strings.Contains(s, "EOF") || strings.Contains(s, "broken pipe")
}
