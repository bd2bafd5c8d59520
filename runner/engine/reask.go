package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/rundir"
)

// Reask asks a share of the calls the cache answers again, live (halu
// verify): a cache replays what a server said; asking again shows whether
// it would say it again. A call is drawn by a hash of Seed and its cache
// key (Draws), so a dry run plans exactly the calls a verify asks, and
// two verifies with one seed ask the same calls. The reply given again is
// the one the item goes on with (its later calls, asked with it, answered
// by the cache where their requests are the recorded ones, asked live
// otherwise), and its call's log records the comparison
// (rundir.CallLog.Reasked). A reply asked again is not written to the
// cache: the cache keeps what the run was made with.
//
// With Keep (a run's --verify), the item goes on with the recorded reply
// instead, so the run's records are those of the run from its cache, and
// a reply given otherwise is kept beside it in the log
// (rundir.Reasked.Again).
type Reask struct {
	// Share is the share of cached calls asked again, in (0, 1].
	Share float64
	Seed  int64
	Keep  bool
}

// Draws reports whether the call with cache key is asked again.
func (r *Reask) Draws(key string) bool {
	if r == nil || r.Share <= 0 {
		return false
	}
	if r.Share >= 1 {
		return true
	}
	sum := sha256.Sum256([]byte(strconv.FormatInt(r.Seed, 10) + "\x00" + key))
	u := float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
	return u < r.Share
}

// EmbedTolerance is how far an embedding asked again may be from the
// recorded one and read the same: cosine similarity at least 1 −
// EmbedTolerance. Float sums in another order (a batch of another size)
// move the last bits of a vector; a similarity used as a metric (Flu,
// semantic sets) does not move at this tolerance in its reported digits.
const EmbedTolerance = 1e-6

// sameEmbedding compares an embedding asked again with the recorded one:
// identical bit for bit, or close within EmbedTolerance.
func sameEmbedding(a, b []float32) (identical, close bool) {
	if len(a) != len(b) {
		return false, false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			cos, err := metrics.Cosine(a, b)
			return false, err == nil && cos >= 1-EmbedTolerance
		}
	}
	return true, true
}

// sameReply reports whether a reply asked again is the recorded one: its
// text byte for byte and, when the call asked for them, its tokens'
// log-probabilities — the confidence a run measures from them (--logprobs)
// is part of what the call returned.
func sameReply(a, b localmodels.ChatResponse) bool {
	if a.Content != b.Content {
		return false
	}
	return len(a.Logprobs) == 0 && len(b.Logprobs) == 0 || reflect.DeepEqual(a.Logprobs, b.Logprobs)
}

// reaskChat asks a generation the cache answered (cached) again, live,
// and returns the reply the item goes on with (the one given now; with
// Keep, the recorded one) and what comparing found.
func (c *Calls) reaskChat(ctx context.Context, stage, kind string, req localmodels.ChatRequest, cached localmodels.ChatResponse) (localmodels.ChatResponse, *rundir.Reasked, error) {
	if c.e.Offline() {
		return cached, nil, fmt.Errorf("%s: %s %s: asked again: %w", stage, kind, req.Model, ErrOffline)
	}
	live, err := c.e.chatOnce(ctx, stage, kind, req)
	if err != nil {
		return cached, nil, fmt.Errorf("%s: %s %s: asked again: %w", stage, kind, req.Model, err)
	}
	r := &rundir.Reasked{}
	switch {
	case sameReply(live, cached):
		r.Identical = 1
	case c.e.Reask.Keep:
		r.Again = ClipText(live.Content, ReplyKeep)
	default:
		r.Recorded = ClipText(cached.Content, ReplyKeep)
	}
	if c.e.Reask.Keep {
		return cached, r, nil
	}
	return live, r, nil
}
