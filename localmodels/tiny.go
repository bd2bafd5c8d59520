package localmodels

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
)

// TinyModelName is the general.name written into the tiny test model; runs
// that used a model carrying it are flagged as meaningless in reports.
const TinyModelName = "halu-tiny-random"

// TinyTemplate is the prompt template the tiny model is imported with.
const TinyTemplate = "{{ .Prompt }}"

// Tiny model shape: llama architecture, 2 blocks, embedding 64, FFN 128,
// 4 heads, context 2048.
const (
	tinyEmbd    = 64
	tinyFF      = 128
	tinyLayers  = 2
	tinyHeads   = 4
	tinyContext = 2048
	ggufAlign   = 32
)

// GGUF metadata value types (gguf.md).
const (
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufString  = 8
	ggufArray   = 9
)

type ggufKV struct {
	key string
	typ uint32
	val any
}

type ggufTensor struct {
	name string
	dims []uint64 // ggml order: dims[0] varies fastest
	data []float32
}

// WriteTinyGGUF writes a deterministic GGUF v3 llama model with random F32
// weights drawn from a PCG generator seeded with seed (norm weights are 1) and
// a SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 byte tokens
// <0x00>..<0xFF> and "▁" plus the printable ASCII characters. The same seed
// always gives the same bytes. The model can be served by Ollama but knows
// nothing: every score it produces is meaningless.
func WriteTinyGGUF(w io.Writer, seed uint64) error {
	return WriteTinyGGUFContext(w, seed, tinyContext)
}

// WriteTinyGGUFContext is WriteTinyGGUF with a trained context of context
// tokens (the metadata a server sizes its window by): a test whose
// prompts are longer than 2,048 tokens needs a model that holds them.
func WriteTinyGGUFContext(w io.Writer, seed uint64, context int) error {
	tokens, types, scores := tinyVocab()
	nVocab := uint64(len(tokens))
	return writeGGUF(w, tinyMetadata(tokens, types, scores, context), tinyTensors(seed, nVocab))
}

// tinyVocab is the tiny model's vocabulary: its tokens, their types and
// scores.
func tinyVocab() (tokens []string, types []int32, scores []float32) {
	tokens = []string{"<unk>", "<s>", "</s>"}
	types = []int32{2, 3, 3}
	scores = []float32{0, 0, 0}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
		scores = append(scores, 0)
	}
	chars := []string{"\u2581"}
	for c := 33; c < 127; c++ {
		chars = append(chars, string(rune(c)))
	}
	for i, c := range chars {
		tokens = append(tokens, c)
		types = append(types, 1)
		scores = append(scores, -float32(i))
	}
	return tokens, types, scores
}

// tinyMetadata is the tiny model's GGUF metadata.
func tinyMetadata(tokens []string, types []int32, scores []float32, context int) []ggufKV {
	return []ggufKV{
		{"general.architecture", ggufString, "llama"},
		{"general.name", ggufString, TinyModelName},
		{"llama.context_length", ggufUint32, uint32(context)},
		{"llama.embedding_length", ggufUint32, uint32(tinyEmbd)},
		{"llama.block_count", ggufUint32, uint32(tinyLayers)},
		{"llama.feed_forward_length", ggufUint32, uint32(tinyFF)},
		{"llama.attention.head_count", ggufUint32, uint32(tinyHeads)},
		{"llama.attention.head_count_kv", ggufUint32, uint32(tinyHeads)},
		{"llama.rope.dimension_count", ggufUint32, uint32(tinyEmbd / tinyHeads)},
		{"llama.attention.layer_norm_rms_epsilon", ggufFloat32, float32(1e-5)},
		{"llama.vocab_size", ggufUint32, uint32(len(tokens))},
		{"tokenizer.ggml.model", ggufString, "llama"},
		{"tokenizer.ggml.tokens", ggufArray, tokens},
		{"tokenizer.ggml.scores", ggufArray, scores},
		{"tokenizer.ggml.token_type", ggufArray, types},
		{"tokenizer.ggml.bos_token_id", ggufUint32, uint32(1)},
		{"tokenizer.ggml.eos_token_id", ggufUint32, uint32(2)},
		{"tokenizer.ggml.unknown_token_id", ggufUint32, uint32(0)},
		{"general.alignment", ggufUint32, uint32(ggufAlign)},
	}
}

// tinyTensors are the tiny model's weights: random from seed, norms 1.
func tinyTensors(seed, nVocab uint64) []ggufTensor {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	random := func(name string, dims ...uint64) ggufTensor {
		n := uint64(1)
		for _, d := range dims {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(rng.NormFloat64() * 0.2)
		}
		return ggufTensor{name, dims, data}
	}
	ones := func(name string, n uint64) ggufTensor {
		data := make([]float32, n)
		for i := range data {
			data[i] = 1
		}
		return ggufTensor{name, []uint64{n}, data}
	}
	tensors := []ggufTensor{random("token_embd.weight", tinyEmbd, nVocab)}
	for l := 0; l < tinyLayers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		tensors = append(tensors,
			ones(p+"attn_norm.weight", tinyEmbd),
			random(p+"attn_q.weight", tinyEmbd, tinyEmbd),
			random(p+"attn_k.weight", tinyEmbd, tinyEmbd),
			random(p+"attn_v.weight", tinyEmbd, tinyEmbd),
			random(p+"attn_output.weight", tinyEmbd, tinyEmbd),
			ones(p+"ffn_norm.weight", tinyEmbd),
			random(p+"ffn_gate.weight", tinyEmbd, tinyFF),
			random(p+"ffn_up.weight", tinyEmbd, tinyFF),
			random(p+"ffn_down.weight", tinyFF, tinyEmbd),
		)
	}
	return append(tensors, ones("output_norm.weight", tinyEmbd), random("output.weight", tinyEmbd, nVocab))
}

// writeGGUF writes a GGUF v3 file: the header, the metadata, the tensor
// infos, then the F32 tensor data, each aligned.
func writeGGUF(w io.Writer, kvs []ggufKV, tensors []ggufTensor) error {
	bw := bufio.NewWriter(w)
	cw := &countWriter{w: bw}
	le := binary.LittleEndian
	put := func(v any) { _ = binary.Write(cw, le, v) }
	putString := func(s string) { put(uint64(len(s))); _, _ = cw.Write([]byte(s)) }

	_, _ = cw.Write([]byte("GGUF"))
	put(uint32(3))
	put(uint64(len(tensors)))
	put(uint64(len(kvs)))
	for _, kv := range kvs {
		putString(kv.key)
		put(kv.typ)
		switch v := kv.val.(type) {
		case string:
			putString(v)
		case uint32, float32:
			put(v)
		case []string:
			put(uint32(ggufString))
			put(uint64(len(v)))
			for _, s := range v {
				putString(s)
			}
		case []float32:
			put(uint32(ggufFloat32))
			put(uint64(len(v)))
			put(v)
		case []int32:
			put(uint32(ggufInt32))
			put(uint64(len(v)))
			put(v)
		default:
			return fmt.Errorf("gguf: unsupported metadata type %T", v)
		}
	}
	var offset uint64
	for _, t := range tensors {
		putString(t.name)
		put(uint32(len(t.dims)))
		for _, d := range t.dims {
			put(d)
		}
		put(uint32(0)) // GGML_TYPE_F32
		put(offset)
		offset = alignUp(offset+uint64(len(t.data))*4, ggufAlign)
	}
	pad := func() { _, _ = cw.Write(make([]byte, alignUp(cw.n, ggufAlign)-cw.n)) }
	pad()
	buf := make([]byte, 4)
	for _, t := range tensors {
		for _, f := range t.data {
			le.PutUint32(buf, math.Float32bits(f))
			_, _ = cw.Write(buf)
		}
		pad()
	}
	if cw.err != nil {
		return fmt.Errorf("gguf: %w", cw.err)
	}
	return bw.Flush()
}

// WriteTinyGGUFFile writes the tiny model to path.
func WriteTinyGGUFFile(path string, seed uint64) error {
	return WriteTinyGGUFFileContext(path, seed, tinyContext)
}

// WriteTinyGGUFFileContext writes the tiny model with a trained context of
// context tokens to path.
func WriteTinyGGUFFileContext(path string, seed uint64, context int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteTinyGGUFContext(f, seed, context); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

type countWriter struct {
	w   io.Writer
	n   uint64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += uint64(n)
	c.err = err
	return n, err
}
