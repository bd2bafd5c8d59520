package rundir

// Fingerprint is what identifies the serving of a model: the same weights
// served by another Ollama version, under another template or quantization,
// or with another context window answer differently. It is part of every
// cache key and of the manifest.
type Fingerprint struct {
	Ollama       string `json:"ollama_version"`
	Model        string `json:"model"`
	Digest       string `json:"digest"`
	Quantization string `json:"quantization,omitempty"`
	Template     string `json:"template_sha256"`
	NumCtx       int    `json:"num_ctx,omitempty"`
	// API is "openai" for a server reached through an OpenAI-compatible
	// API, whose defaults differ from Ollama's native ones (empty: native).
	API string `json:"api,omitempty"`
	// Weights is the path a server without digests names the weights by;
	// Identity says how they are known when it is less than a digest.
	Weights  string `json:"weights,omitempty"`
	Identity string `json:"identity,omitempty"`
}
