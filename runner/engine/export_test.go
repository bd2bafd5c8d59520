package engine

import "time"

// GatheringEmbeds returns how many texts the embedding request of model
// being gathered holds (0 when none is open), so a test can hold a request
// until every item's text has joined one.
func GatheringEmbeds(e *Engine, model string) int {
	e.embeds.mu.Lock()
	defer e.embeds.mu.Unlock()
	if b := e.embeds.open[model]; b != nil && !b.sent {
		return len(b.texts)
	}
	return 0
}

// GatherEmbedsFor sets how long an admitted embedding request waits at
// most for the items working between calls (gather).
func GatherEmbedsFor(e *Engine, d time.Duration) { e.embeds.gatherFor = d }
