package localmodels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ollama/ollama/api"
)

// ModelInfo is what a run records about each model it uses: enough to tell
// later which weights, quantisation and prompt template produced a result.
type ModelInfo struct {
	Name          string   `json:"name"`
	Digest        string   `json:"digest"`
	Family        string   `json:"family,omitempty"`
	Families      []string `json:"families,omitempty"`
	ParameterSize string   `json:"parameter_size,omitempty"`
	Quantization  string   `json:"quantization,omitempty"`
	Format        string   `json:"format,omitempty"`
	Size          int64    `json:"size,omitempty"`
	// TemplateSHA256 is the hash of the model's prompt template: the same
	// weights under another template answer differently.
	TemplateSHA256 string `json:"template_sha256,omitempty"`
	ContextLength  int    `json:"context_length,omitempty"`
	ParameterCount int64  `json:"parameter_count,omitempty"`
	// Tiny is set for toy-sized models (fewer than TinyParameterLimit
	// parameters), halu's random-weight test model among them: their scores
	// are meaningless and reports say so.
	Tiny bool `json:"tiny,omitempty"`
	// Capabilities are what the server says the model can do
	// ("completion", "thinking", "embedding", …).
	Capabilities []string `json:"capabilities,omitempty"`
	// FixedContext is set when the server fixes the context window (an
	// OpenAI-compatible API takes no num_ctx); ContextLength is then that
	// window, 0 when the server does not say.
	FixedContext bool `json:"fixed_context,omitempty"`
	// Identity says how the weights are known (IdentityDigest, Path,
	// Name; empty means a digest from Ollama's native API) and Weights is
	// the path a server names them by.
	Identity string `json:"identity,omitempty"`
	Weights  string `json:"weights,omitempty"`
	// Blobs are the content digests of the files Ollama loads for the
	// model (weights, projectors, adapters: the FROM and ADAPTER lines of
	// its Modelfile), sorted and comma-joined. Unlike Digest they do not
	// depend on where a GGUF was imported from, so they tell whether two
	// servers hold the same weights.
	Blobs string `json:"blobs,omitempty"`
	// DefaultsSHA256 is the hash of the model's default parameters and
	// system prompt: what a request that does not set them gets.
	DefaultsSHA256 string `json:"defaults_sha256,omitempty"`
	// Defaults are those parameters by name (its Modelfile's PARAMETER
	// lines, "stop" left out): top_k, top_p, repeat_penalty and the like
	// that the server applies to every call that does not set them.
	Defaults map[string]string `json:"defaults,omitempty"`
}

// parseParameters reads show's parameters text ("top_k    20" per line;
// a name given twice, as "stop" is, keeps its values joined), leaving out
// the stop sequences.
func parseParameters(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] == "stop" {
			continue
		}
		v := strings.Join(f[1:], " ")
		if old, ok := out[f[0]]; ok {
			v = old + ", " + v
		}
		out[f[0]] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Thinks reports whether the model can think (Ollama's "thinking"
// capability): such a model thinks by default, spending its num_predict
// on thinking, unless the request sends think: false.
func (m ModelInfo) Thinks() bool {
	for _, c := range m.Capabilities {
		if c == "thinking" {
			return true
		}
	}
	return false
}

// TinyParameterLimit is the parameter count below which a model is taken to
// be a test toy. No model this small answers questions; the ones halu meets
// are its own random-weight model and TinyStories-sized story generators.
const TinyParameterLimit = 10_000_000

// CanonicalName adds the ":latest" tag Ollama assumes when none is given.
func CanonicalName(name string) string {
	if name == "" || strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		return name
	}
	return name + ":latest"
}

// ShortDigest is the first 12 hex digits of a digest, as Ollama lists
// them ("sha256:" dropped).
func ShortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// List returns the models the server has, sorted by name.
func (c *Client) List(ctx context.Context) ([]ModelInfo, error) {
	lr, err := c.api.List(ctx)
	if err != nil {
		return nil, c.wrap("list models", err)
	}
	out := make([]ModelInfo, 0, len(lr.Models))
	for _, m := range lr.Models {
		out = append(out, fromList(m))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func fromList(m api.ListModelResponse) ModelInfo {
	return ModelInfo{
		Name:          m.Name,
		Digest:        m.Digest,
		Family:        m.Details.Family,
		Families:      m.Details.Families,
		ParameterSize: m.Details.ParameterSize,
		Quantization:  m.Details.QuantizationLevel,
		Format:        m.Details.Format,
		Size:          m.Size,
	}
}

// ErrModelNotFound is returned by Info for a model the server does not have.
var ErrModelNotFound = fmt.Errorf("model not found")

// Info returns the metadata of one model: digest and details from List (Show
// carries no digest), template and context length from Show.
func (c *Client) Info(ctx context.Context, name string) (ModelInfo, error) {
	models, err := c.List(ctx)
	if err != nil {
		return ModelInfo{}, err
	}
	want := CanonicalName(name)
	var info ModelInfo
	found := false
	for _, m := range models {
		if m.Name == want || m.Name == name {
			info, found = m, true
			break
		}
	}
	if !found {
		return ModelInfo{}, fmt.Errorf("ollama %s: %q: %w (pull it with `halu models pull %s`, or import a GGUF file with `halu models import FILE.gguf --name %s`)",
			c.base.Host, name, ErrModelNotFound, name, name)
	}
	show, err := c.api.Show(ctx, &api.ShowRequest{Model: info.Name})
	if err != nil {
		return ModelInfo{}, c.wrap("show "+name, err)
	}
	for _, cp := range show.Capabilities {
		info.Capabilities = append(info.Capabilities, string(cp))
	}
	sum := sha256.Sum256([]byte(show.Template))
	info.TemplateSHA256 = hex.EncodeToString(sum[:])
	info.Blobs = modelfileBlobs(show.Modelfile)
	sum = sha256.Sum256([]byte(show.Parameters + "\x00" + show.System))
	info.DefaultsSHA256 = hex.EncodeToString(sum[:])
	info.Defaults = parseParameters(show.Parameters)
	for k, v := range show.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			if f, ok := v.(float64); ok {
				info.ContextLength = int(f)
			}
		}
		if k == "general.parameter_count" {
			if f, ok := v.(float64); ok {
				info.ParameterCount = int64(f)
				info.Tiny = info.ParameterCount < TinyParameterLimit
			}
		}
	}
	return info, nil
}

// modelfileBlobs reads the files a Modelfile from show loads (its FROM and
// ADAPTER lines): a blob path's "sha256-HEX" becomes "sha256:HEX", any
// other argument is kept whole. The list is sorted and comma-joined.
func modelfileBlobs(modelfile string) string {
	var blobs []string
	for _, line := range strings.Split(modelfile, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (!strings.EqualFold(f[0], "FROM") && !strings.EqualFold(f[0], "ADAPTER")) {
			continue
		}
		arg := strings.Join(f[1:], " ")
		if base := filepath.Base(arg); strings.HasPrefix(base, "sha256-") {
			arg = "sha256:" + strings.TrimPrefix(base, "sha256-")
		}
		blobs = append(blobs, arg)
	}
	sort.Strings(blobs)
	return strings.Join(blobs, ",")
}

// PullProgress reports a pull's progress: status text and bytes of the
// current layer.
type PullProgress func(status string, completed, total int64)

// Pull downloads a model from its registry (needs network).
func (c *Client) Pull(ctx context.Context, name string, progress PullProgress) error {
	err := c.api.Pull(ctx, &api.PullRequest{Model: name}, func(r api.ProgressResponse) error {
		if progress != nil {
			progress(r.Status, r.Completed, r.Total)
		}
		return nil
	})
	return c.wrap("pull "+name, err)
}

// ImportOptions are the optional parts of a GGUF import.
type ImportOptions struct {
	// Template is the prompt template; empty keeps what the GGUF file says.
	Template string
	// System is a default system prompt.
	System string
	// Progress sees each status line the server sends.
	Progress func(status string)
}

// Import uploads a GGUF file as a blob and creates model name from it, all
// through the API: it needs no network and no registry.
func (c *Client) Import(ctx context.Context, path, name string, opt ImportOptions) (ModelInfo, error) {
	digest, size, err := fileDigest(path)
	if err != nil {
		return ModelInfo{}, fmt.Errorf("import %s: %w", path, err)
	}
	if err := checkGGUF(path); err != nil {
		return ModelInfo{}, fmt.Errorf("import %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return ModelInfo{}, fmt.Errorf("import %s: %w", path, err)
	}
	defer f.Close()
	if opt.Progress != nil {
		opt.Progress(fmt.Sprintf("uploading %s (%d bytes, %s)", filepath.Base(path), size, digest))
	}
	if err := c.api.CreateBlob(ctx, digest, f); err != nil {
		return ModelInfo{}, c.wrap("upload "+path, err)
	}
	req := &api.CreateRequest{
		Model:    name,
		Files:    map[string]string{filepath.Base(path): digest},
		Template: opt.Template,
		System:   opt.System,
	}
	err = c.api.Create(ctx, req, func(r api.ProgressResponse) error {
		if opt.Progress != nil && r.Status != "" {
			opt.Progress(r.Status)
		}
		return nil
	})
	if err != nil {
		return ModelInfo{}, c.wrap("create "+name, err)
	}
	return c.Info(ctx, name)
}

func fileDigest(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, nil
}

func checkGGUF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "GGUF" {
		return fmt.Errorf("not a GGUF file (no GGUF magic at offset 0)")
	}
	return nil
}
