package localmodels

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ollama/ollama/api"
)

// EmbedRequest is texts to embed with model, at most Batch per call
// (Batch <= 0: all at once), with the serving settings the run's chat
// calls carry. Ollama reloads a model's runner when a request's num_ctx
// or num_thread differs from the loaded runner's, so an embedding call
// without them between chats to the same model file reloads it twice;
// KeepAlive keeps it loaded as the chats do.
type EmbedRequest struct {
	Model     string
	Texts     []string
	Batch     int
	NumCtx    int
	NumThread int
	KeepAlive time.Duration
}

// Options are the request's serving settings, as a chat's options.
func (r EmbedRequest) Options() Options {
	var o Options
	if r.NumCtx > 0 {
		o.NumCtx = Int(r.NumCtx)
	}
	if r.NumThread > 0 {
		o.NumThread = Int(r.NumThread)
	}
	return o
}

// options is the request's serving settings as Ollama's options map.
func (r EmbedRequest) options() map[string]any {
	if m := r.Options().Map(); len(m) > 0 {
		return m
	}
	return nil
}

// Embed returns one embedding per text, sending at most req.Batch texts
// per /api/embed call, each with the request's options and keep_alive.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) ([][]float32, error) {
	model, texts, batch := req.Model, req.Texts, req.Batch
	if batch <= 0 {
		batch = len(texts)
	}
	var keep *api.Duration
	if req.KeepAlive > 0 {
		keep = &api.Duration{Duration: req.KeepAlive}
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		end := min(start+batch, len(texts))
		resp, err := c.api.Embed(ctx, &api.EmbedRequest{Model: model, Input: texts[start:end], Options: req.options(), KeepAlive: keep})
		if err != nil {
			return nil, c.wrap("embed "+model, err)
		}
		if len(resp.Embeddings) != end-start {
			return nil, fmt.Errorf("ollama %s: embed %s: %w: asked for %d embeddings, got %d", c.base.Host, model, ErrIncomplete, end-start, len(resp.Embeddings))
		}
		for i, v := range resp.Embeddings {
			if err := checkVector(v, out, resp.Embeddings[0]); err != nil {
				return nil, fmt.Errorf("ollama %s: embed %s: text %d: %w", c.base.Host, model, start+i+1, err)
			}
		}
		out = append(out, resp.Embeddings...)
	}
	return out, nil
}

// checkVector rejects an embedding that cannot be one: empty, of another
// dimension than the others of the call (earlier batches or first of this
// one), or holding a value that is not a finite number.
func checkVector(v []float32, earlier [][]float32, first []float32) error {
	want := len(first)
	if len(earlier) > 0 {
		want = len(earlier[0])
	}
	if len(v) == 0 || len(v) != want {
		return fmt.Errorf("%w: an embedding of %d dimensions among ones of %d", ErrIncomplete, len(v), want)
	}
	for j, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: value %d of the embedding is %v", ErrIncomplete, j, x)
		}
	}
	return nil
}
