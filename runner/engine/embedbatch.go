package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"halu/localmodels"
)

// maxEmbedBatch is the most texts one embedding request gathers: the
// chunk the client sends at once (embedRequest's Batch).
const maxEmbedBatch = 64

// embedBatch is one embedding request being gathered: the texts of every
// item that asked the model for embeddings while the request waited for
// its turn. Each request costs the server a call's overhead whatever it
// carries, and items often embed one text each (HIC-Bench's Flu with one
// answer per item and temperature: 500 requests of one text where 8 of 64
// do). Under embedBatches.mu: texts grows until sent; vecs and err are set
// before done closes.
type embedBatch struct {
	texts []string
	sent  bool
	done  chan struct{}
	vecs  [][]float32
	err   error
}

// embedBatches holds the batch open per embedding model: one a caller
// may still join.
type embedBatches struct {
	mu   sync.Mutex
	open map[string]*embedBatch
	// working counts the run's items that work between model calls: the
	// items in progress less the calls waiting for a slot or a reply
	// (Engine.call) and the callers waiting on a batch. A caller of
	// Engine.call outside an item lowers it while it calls: gather then
	// waits less, never more.
	working atomic.Int64
	// gatherFor bounds gather (0: gatherFor; tests lengthen it).
	gatherFor time.Duration
}

const (
	// gatherFor is the longest an admitted embedding request waits for
	// the items working between calls to reach their next call (gather).
	gatherFor = time.Millisecond
	// gatherPoll is how often it looks.
	gatherPoll = 50 * time.Microsecond
)

// gather waits, once b's request is admitted, until no item of the run
// works between model calls, b holds maxEmbedBatch texts, or gatherFor
// has passed. An item's last step is often to embed what it made: the
// item whose reply freed the slot b was admitted to is about to join it
// (in HIC-Bench with one call in flight, every 32 items' Flu embeddings
// went in a request of 31 texts and one of 1, as the item that freed the
// slot came to join a request sealed tens of microseconds before). The
// slot is idle meanwhile — microseconds, against the server's cost of a
// request.
func (bs *embedBatches) gather(ctx context.Context, b *embedBatch) {
	bound := bs.gatherFor
	if bound == 0 {
		bound = gatherFor
	}
	deadline := time.Now().Add(bound)
	for bs.working.Load() > 0 && ctx.Err() == nil && time.Now().Before(deadline) {
		bs.mu.Lock()
		full := len(b.texts) >= maxEmbedBatch
		bs.mu.Unlock()
		if full {
			return
		}
		time.Sleep(gatherPoll)
	}
}

// embed returns the embeddings of texts by model, sent with the texts
// other items ask the same model for while the request waits for a slot:
// the first caller makes the request (the scheduler admits it as any
// call), later ones add their texts until it is sent and take their share
// of its reply. A batch that fails is asked again text set by text set
// (each caller alone), so one item's text that the server refuses fails
// that item only.
func (e *Engine) embed(ctx context.Context, stage, model string, texts []string) ([][]float32, error) {
	bs := &e.embeds
	bs.mu.Lock()
	if bs.open == nil {
		bs.open = map[string]*embedBatch{}
	}
	if b := bs.open[model]; b != nil && !b.sent && len(b.texts)+len(texts) <= maxEmbedBatch {
		off := len(b.texts)
		b.texts = append(b.texts, texts...)
		bs.mu.Unlock()
		bs.working.Add(-1)
		select {
		case <-b.done:
		case <-ctx.Done():
			bs.working.Add(1)
			return nil, ctx.Err()
		}
		bs.working.Add(1)
		if b.err != nil {
			return e.embedAlone(ctx, stage, model, texts)
		}
		return b.vecs[off : off+len(texts)], nil
	}
	b := &embedBatch{texts: append([]string(nil), texts...), done: make(chan struct{})}
	bs.open[model] = b
	bs.mu.Unlock()

	// seal ends the gathering once b's request is admitted (after
	// gather): no caller joins b after it. Only this caller calls it.
	gathered := false
	seal := func() []string {
		if !gathered {
			gathered = true
			bs.gather(ctx, b)
		}
		bs.mu.Lock()
		defer bs.mu.Unlock()
		if !b.sent {
			b.sent = true
			if bs.open[model] == b {
				delete(bs.open, model)
			}
		}
		return b.texts
	}
	vecs, err := e.sendEmbed(ctx, stage, model, seal)
	all := seal()
	b.vecs, b.err = vecs, err
	close(b.done)
	if err != nil && len(all) > len(texts) && ctx.Err() == nil {
		return e.embedAlone(ctx, stage, model, texts) // another caller's text may be at fault
	}
	return vecs[:min(len(vecs), len(texts))], err
}

// embedAlone embeds texts in a request of their own.
func (e *Engine) embedAlone(ctx context.Context, stage, model string, texts []string) ([][]float32, error) {
	return e.sendEmbed(ctx, stage, model, func() []string { return texts })
}

// sendEmbed makes one embedding request of model, admitted and retried as
// any call; texts gives what it carries when it is admitted (a gathering
// batch is sealed then). A reply with another number of vectors than texts
// is incomplete.
func (e *Engine) sendEmbed(ctx context.Context, stage, model string, texts func() []string) ([][]float32, error) {
	req := e.embedRequest(model, nil)
	var vecs [][]float32
	err := e.call(ctx, stage, model, e.loadKey(model, req.Options()), "", true, e.Config.Timeout, func(ctx context.Context) (bool, error) {
		r := req
		r.Texts = texts()
		var err error
		vecs, err = e.Client.Embed(ctx, r)
		if err == nil && len(vecs) != len(r.Texts) {
			err = fmt.Errorf("%w: asked for %d embeddings, got %d", localmodels.ErrIncomplete, len(r.Texts), len(vecs))
		}
		return false, err
	})
	return vecs, err
}
