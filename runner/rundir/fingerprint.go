package rundir

import "encoding/json"

// Fingerprint is what identifies the serving of a model: the same weights
// served by another server version, under another template or
// quantization, or with another context window answer differently. It is
// part of every cache key (CacheKeyForm) and of the manifest.
type Fingerprint struct {
	// ServerVersion is the model server's version (Ollama's, vLLM's, …).
	ServerVersion string `json:"server_version"`
	Model         string `json:"model"`
	Digest        string `json:"digest"`
	Quantization  string `json:"quantization,omitempty"`
	Template      string `json:"template_sha256"`
	NumCtx        int    `json:"num_ctx,omitempty"`
	// API is "openai" for a server reached through an OpenAI-compatible
	// API, whose defaults differ from Ollama's native ones (empty: native).
	API string `json:"api,omitempty"`
	// Weights is the path a server without digests names the weights by;
	// Identity says how they are known when it is less than a digest.
	Weights  string `json:"weights,omitempty"`
	Identity string `json:"identity,omitempty"`
}

// keyFingerprint is a Fingerprint as cache keys have always encoded it
// (the server's version under "ollama_version"): renaming a field must not
// turn every cached reply into a miss.
type keyFingerprint struct {
	Ollama       string `json:"ollama_version"`
	Model        string `json:"model"`
	Digest       string `json:"digest"`
	Quantization string `json:"quantization,omitempty"`
	Template     string `json:"template_sha256"`
	NumCtx       int    `json:"num_ctx,omitempty"`
	API          string `json:"api,omitempty"`
	Weights      string `json:"weights,omitempty"`
	Identity     string `json:"identity,omitempty"`
}

// CacheKeyForm is the fingerprint as a cache key holds it.
func (f Fingerprint) CacheKeyForm() any {
	return keyFingerprint{Ollama: f.ServerVersion, Model: f.Model, Digest: f.Digest, Quantization: f.Quantization, Template: f.Template,
		NumCtx: f.NumCtx, API: f.API, Weights: f.Weights, Identity: f.Identity}
}

// UnmarshalJSON reads a fingerprint, the server's version under its
// current key or under "ollama_version" (run format 1).
func (f *Fingerprint) UnmarshalJSON(b []byte) error {
	type plain Fingerprint
	var v struct {
		plain
		Ollama string `json:"ollama_version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Fingerprint(v.plain)
	if f.ServerVersion == "" {
		f.ServerVersion = v.Ollama
	}
	return nil
}
