package zapv17

import "testing"

// zapChunkSize gives zap's chunk sizes for each chunk mode.
func TestChunkSize(t *testing.T) {
	if _, err := zapChunkSize(1026, 5000, 0); err != ErrLayout {
		t.Fatalf("chunk size 0: %v", err)
	}
	for _, c := range []struct {
		mode        uint32
		card, docs  uint64
		want        uint64
		description string
	}{
		{1024, 10, 100000, 1024, "legacy"},
		{1025, 10, 100000, 100000, "1025, few"},
		{1025, 5000, 100000, 1024, "1025, many"},
		{1026, 1023, 100000, 100000, "1026, one chunk"},
		{1026, 5000, 100000, 20000, "1026, five chunks"},
	} {
		if got, err := zapChunkSize(c.mode, c.card, c.docs); err != nil || got != c.want {
			t.Errorf("%s: %d %v, want %d", c.description, got, err, c.want)
		}
	}
}

// TestZapLenIsTheNormsLength: a length read from a zap file is the one its
// float32 norm gives back, for every length below exactLen (so the walk
// may use it as read), and for lengths above it too.
func TestZapLenIsTheNormsLength(t *testing.T) {
	for l := uint64(0); l < exactLen; l++ {
		if got := DocLen(zapNorm(l)); got != int(l) {
			t.Fatalf("length %d: the norm gives %d", l, got)
		}
	}
	for _, l := range []uint64{exactLen, 6660631, 1 << 30} {
		if got, want := zapLen(l), DocLen(zapNorm(l)); got != want {
			t.Fatalf("length %d: %d, the norm gives %d", l, got, want)
		}
	}
}
