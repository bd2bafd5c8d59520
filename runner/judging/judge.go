package judging

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"halu/localmodels"
	"halu/runner/rundir"
)

// Asker is the engine's side of a judgement (engine.Calls is one): the
// judge contract — the call, repair turns for a reply that does not read,
// then an unscored judgement with every raw reply kept — and the record of
// how each reply was read.
type Asker interface {
	// Judge asks req's model and hands each reply to parse; ok is false
	// when no reply parsed (the judgement is unscored). A parse error
	// that is a *RepairError asks for the next turn held to its Schema.
	Judge(ctx context.Context, stage string, req localmodels.ChatRequest, parse func(raw string, cut bool) error) (ok bool, err error)
	// Readers is how text replies are read: ReadersPaper or ReadersHalu.
	Readers() string
	// Read records v as what the reply raw of stage was read as, and r
	// (when not nil) a reading that was not the plain one.
	Read(stage, model, raw string, v any, r *rundir.Reading)
	// Verdict records a verdict read, as the judge card measures it.
	Verdict(v rundir.Verdict)
	// Checked reports whether judge's next judgement at stage is in the
	// judge card's sample: judged again with another seed, and swapped
	// when pairwise. It is asked once per judgement that may be checked.
	Checked(stage, judge string) bool
}

// Validator is implemented by judgements that check their own ranges after
// decoding (a score outside 1..5 is a parse failure, not a score).
type Validator interface {
	Validate() error
}

// JudgeAs asks a judge for a T in either of the two formats the suites
// offer: with a schema, structured output; with schema nil, the suite's
// free-text format, read by parseText. See JudgeWith.
func JudgeAs[T any](ctx context.Context, c Asker, stage string, req localmodels.ChatRequest, schema json.RawMessage, parseText func(raw string) (T, error)) (T, bool, error) {
	return JudgeWith(ctx, c, stage, req, schema, TextReader(parseText))
}

// TextReader is the Reader of a judgement read by parseText alone (what
// JudgeAs reads with).
func TextReader[T any](parseText func(raw string) (T, error)) Reader[T] {
	return Reader[T]{Text: parseText}
}

// Reader is how a suite reads one kind of judge reply.
type Reader[T any] struct {
	// Text reads the suite's text format (halu's reader). It sees the reply
	// cleaned by Read: reasoning, quoted evaluated text and what precedes a revision removed.
	Text func(raw string) (T, error)
	// Paper is the authors' own reading rule, where their code reads the
	// text format differently from Text — except that a reply Text finds
	// stating two values (ErrTwoValues) is read by neither. It sees the reply with only its
	// reasoning removed (their code read the whole reply). Under the paper
	// readers it decides text-format replies; either way both readings
	// are made and every reply on which they differ is recorded.
	Paper func(raw string) (T, error)
	// JSON reads a JSON-mode reply whose JSON is not the shape of T; nil
	// decodes the stated JSON object into T (DecodeStated).
	JSON func(raw string) (T, error)
	// Quoted are the evaluated texts the judge saw: what it repeats of them
	// is not read (see Unquote).
	Quoted []string
	// Same says whether two readings state the same verdict; nil compares
	// them whole. A reader that also keeps prose (a critic's analysis) says
	// here what the verdict is, so the two readers' different cuts of the
	// prose are not counted as a disagreement.
	Same func(a, b T) bool
	// Other, when set, receives the reading that did not decide each reply
	// read by both readers (Text and Paper) on which they disagree — the
	// authors' rule's under the halu readers, halu's under the paper
	// readers; unread when that reader read nothing. A suite keeps it in
	// its record so the run's figures can be shown under the other reading
	// beside the headline (see summary.Beside). It is called once, after
	// the judge contract ends, with the last reply's other reading.
	Other func(v T, unread bool)
	// Subject is the model whose text is judged, where the suite knows it
	// (the judge card's self-preference check).
	Subject string
	// Check marks a judgement the judge card checks on its sample (judged
	// again with another seed; swapped when pairwise). Structured
	// generations read through the judge contract (claims, entities, a
	// constraint mapping) leave it unset.
	Check bool
	// Swap, for a pairwise judgement, is the request with its two texts
	// in the other order: on the judge card's sample the judgement is
	// asked that way too (order swap).
	Swap func(req localmodels.ChatRequest) localmodels.ChatRequest
	// Schema is the verdict's JSON schema, for a judge asked in text: a
	// reply that states two values for a field (ErrTwoValues) is
	// re-asked in a repair turn held to it (structured output: the judge
	// restates its final verdict as JSON), where repairs are on.
	Schema json.RawMessage
}

// RepairError is a parse error that asks for the repair turn to be held
// to Schema (the request's Format): the judge restates its verdict as
// JSON. The next reply parse is handed is that turn's.
type RepairError struct {
	Err    error
	Schema json.RawMessage
}

func (e *RepairError) Error() string { return e.Err.Error() }
func (e *RepairError) Unwrap() error { return e.Err }

// Readers: "halu" (the default) reads text replies by halu's careful
// readers, which make the headline figures; "paper" by the authors' rule
// where their code has one. Both readings are made either way, and the
// run's figures under the other are shown beside the headline. Reading is
// not part of a paper's protocol (the protocol is what the judge is
// asked), so neither choice is a departure.
const (
	ReadersPaper = "paper"
	ReadersHalu  = "halu"
)

// JudgeWith asks a judge for a T. With a schema, the schema goes in Format
// and is described in the prompt too (a server that ignores Format still
// hears what to write); the reply's JSON verdict is decoded, and a reply
// without one is read by r.Text before it counts as a failure (recorded as
// a "fallback" Reading). Without a schema the reply is read by r.Text, or by
// r.Paper under the paper readers. Every reply has its reasoning and its
// quotes of r.Quoted removed before any reader sees it. A T with a Validate
// method is validated; a reply that fails follows the judge contract
// (repair turns, then unscored). Each verdict read is recorded for the
// judge card, and with r.Check a unit in the card's sample (Asker.Checked) is judged
// again with the seed after the request's (stage "STAGE-retest") and,
// when r.Swap is set, with its texts swapped ("STAGE-swap"); those
// checks never change the verdict returned.
func JudgeWith[T any](ctx context.Context, c Asker, stage string, req localmodels.ChatRequest, schema json.RawMessage, r Reader[T]) (T, bool, error) {
	unit := UnitKey(stage, req.Messages)
	out, ok, err := judgeOnce(ctx, c, stage, "", unit, req, schema, r)
	if err != nil || !r.Check || !c.Checked(stage, req.Model) {
		return out, ok, err
	}
	// The judge card's checks: the other reading and r.Other belong to the
	// judgement itself, not to its checks.
	check := r
	check.Other = nil
	again := req
	seed := 1
	if req.Options.Seed != nil {
		seed = *req.Options.Seed + 1
	}
	again.Options.Seed = &seed
	if _, _, err := judgeOnce(ctx, c, stage+"-retest", "retest", unit, again, schema, check); err != nil {
		return out, ok, err
	}
	if r.Swap != nil {
		if _, _, err := judgeOnce(ctx, c, stage+"-swap", "swap", unit, r.Swap(req), schema, check); err != nil {
			return out, ok, err
		}
	}
	return out, ok, nil
}

// UnitKey names what a judge is shown at stage, without the judge: the
// hash of the stage and the messages' roles and texts. Judges of one
// unit share it.
func UnitKey(stage string, msgs []localmodels.Message) string {
	h := sha256.New()
	h.Write([]byte(stage))
	for _, m := range msgs {
		h.Write([]byte{0})
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// judgeOnce is one judgement under the judge contract; a verdict read is
// recorded for the judge card under check ("" for the judgement itself).
func judgeOnce[T any](ctx context.Context, c Asker, stage, check, unit string, req localmodels.ChatRequest, schema json.RawMessage, r Reader[T]) (T, bool, error) {
	var out T
	if schema != nil {
		req.Format = schema
		req.Messages = withSchemaNote(req.Messages, schema)
	}
	var alt *altRead[T] // the last reply's other reading, when they differed
	held := false       // the reply is a repair turn's held to r.Schema
	ok, err := c.Judge(ctx, stage, req, func(raw string, cut bool) error {
		got, err := Read(raw, cut, schema != nil || held, c.Readers(), r)
		alt = got.alt
		if err != nil {
			held = schema == nil && r.Schema != nil && errors.Is(err, ErrTwoValues)
			if held {
				return &RepairError{Err: err, Schema: r.Schema}
			}
			return err
		}
		var rd *rundir.Reading
		switch {
		case held:
			rd = &rundir.Reading{Stage: stage, Model: req.Model, How: "held", Used: rundir.Show(got.V)}
		case got.How != "":
			rd = &rundir.Reading{Stage: stage, Model: req.Model, How: got.How, Used: rundir.Show(got.V), Other: got.Other}
		}
		out = got.V
		c.Read(stage, req.Model, raw, got.V, rd)
		return nil
	})
	if alt != nil && r.Other != nil && err == nil {
		r.Other(alt.v, alt.unread)
	}
	if ok && err == nil {
		if vals := Quantities(out); len(vals) > 0 {
			chars := 0
			for _, q := range r.Quoted {
				chars += utf8.RuneCountInString(q)
			}
			v := rundir.Verdict{Stage: strings.TrimSuffix(strings.TrimSuffix(stage, "-retest"), "-swap"), Judge: req.Model, Unit: unit, Check: check,
				Subject: r.Subject, Chars: chars, Values: vals}
			if check == "" {
				v.Body = strings.Join(r.Quoted, "\n\n---\n\n")
			}
			c.Verdict(v)
		}
	}
	return out, ok, err
}

// Outcome is what Read made of one judge reply.
type Outcome[T any] struct {
	// V is the verdict read.
	V T
	// How is "" for the plain reading, "fallback" for a JSON-mode reply
	// read by the text reader, "disagree" when halu's reader and the
	// authors' rule read it differently; Other is then the reading that did
	// not decide.
	How, Other string
	alt        *altRead[T]
}

// Read is the one way a judge reply is read — by the engine's judge
// contract (JudgeWith) for every judgement of a run, and by the tests that
// measure the readers (TestReplyCorpus): cleaning, then the format's
// reader, then the authors' rule beside.
//
// Cleaning: the reasoning is removed (StripReasoning); then what the
// judge quotes of the evaluated texts r.Quoted (Unquote); then, for a reply
// cut at its token cap, the word the cap may have cut (DropCutWord); then
// everything before the reply's last revision (Revision), so a verdict the
// judge corrects is read by its correction — in JSON mode too — and a
// correction that states no whole verdict leaves the reply unread, with
// the reason. The authors' rule reads the reply with only its reasoning
// removed, as their code read it whole.
func Read[T any](raw string, cut, jsonMode bool, readers string, r Reader[T]) (Outcome[T], error) {
	answer := StripReasoning(raw)
	s := Unquote(answer, r.Quoted...)
	if cut {
		s = DropCutWord(s) // "Score: 1" cut at the cap may have been "Score: 10"
	}
	if strings.TrimSpace(s) == "" {
		return Outcome[T]{}, errors.New("empty reply (after reasoning and quoted text are removed)")
	}
	revised := Revision(s)
	v, how, other, alt, err := readReply(answer, revised, jsonMode, readers, r)
	if err != nil && revised != strings.TrimSpace(s) && LeavesVerdict(revised) {
		// A correction of the reasoning ("Correction: 1908, not 1913"):
		// the verdict before it stands.
		pre := strings.TrimSpace(s[:strings.LastIndex(s, revised)])
		if pv, phow, pother, palt, perr := readReply(answer, pre, jsonMode, readers, r); perr == nil {
			return Outcome[T]{V: pv, How: phow, Other: pother, alt: palt}, nil
		}
	}
	if err != nil && revised != strings.TrimSpace(s) {
		if _, _, _, _, werr := readReply(answer, s, jsonMode, readers, r); errors.Is(werr, ErrTwoValues) && !errors.Is(err, ErrTwoValues) {
			err = werr // the reply states two values, and its revision settles neither
		}
		err = fmt.Errorf("the reply revises itself and its revision does not state a whole verdict (%q): %w", clip(revised, 80), err)
	}
	return Outcome[T]{V: v, How: how, Other: other, alt: alt}, err
}

// clip shortens s to at most n runes for a message.
func clip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}

// Quantifier is implemented by verdicts that say themselves what they
// measure (a fluency grade letter is the score it stands for).
type Quantifier interface {
	Quantities() map[string]float64
}

// Quantities are a verdict's measured quantities for the judge card: its
// Quantities when it has them, else its top-level JSON numbers and yes/no
// fields (1 for yes), by field name. Text fields (a critic's analysis)
// are not quantities.
func Quantities(v any) map[string]float64 {
	if q, ok := v.(Quantifier); ok {
		return q.Quantities()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	out := map[string]float64{}
	for k, raw := range m {
		var f float64
		var yes bool
		switch {
		case json.Unmarshal(raw, &f) == nil:
			out[k] = f
		case json.Unmarshal(raw, &yes) == nil:
			out[k] = 0
			if yes {
				out[k] = 1
			}
		}
	}
	return out
}

// altRead is the reading of a reply that did not decide it.
type altRead[T any] struct {
	v      T
	unread bool
}

// readReply reads one cleaned reply; how and other describe a reading that
// is recorded (see Reading).
//
// answer is the reply without its reasoning, s the same without quoted
// evaluated text: halu's readers read s; the authors' rule reads answer, as
// their code read the reply whole.
func readReply[T any](answer, s string, jsonMode bool, readers string, r Reader[T]) (v T, how, other string, alt *altRead[T], err error) {
	valid := func(v T, err error) (T, error) {
		if err != nil {
			return v, err
		}
		if val, ok := any(&v).(Validator); ok {
			return v, val.Validate()
		}
		return v, nil
	}
	if jsonMode {
		dec := r.JSON
		if dec == nil {
			dec = decodeStated[T]
		}
		v, err = valid(dec(s))
		if err == nil && r.Text != nil {
			// Prose around the JSON verdict that states a field again with
			// another value ("…so hallucination is true") makes two values.
			if _, terr := r.Text(besideJSON(v, s)); errors.Is(terr, ErrTwoValues) {
				return v, "", "", nil, fmt.Errorf("the JSON verdict and the prose beside it: %w", terr)
			}
		}
		if err == nil || r.Text == nil {
			return v, "", "", nil, err
		}
		tv, terr := valid(r.Text(s))
		if terr != nil {
			return v, "", "", nil, fmt.Errorf("%w; as text: %w", err, terr)
		}
		return tv, "fallback", "", nil, nil
	}
	text := r.Text
	if text == nil {
		text = decodeStated[T]
	}
	hv, herr := valid(text(s))
	if r.Paper == nil {
		return hv, "", "", nil, herr
	}
	pv, perr := valid(r.Paper(answer))
	paper := readers == ReadersPaper
	if paper {
		v, err, other = pv, perr, showRead(hv, herr)
		if errors.Is(herr, ErrTwoValues) {
			// A reply that states two values is read as neither under
			// either readers: the authors' rule would pick one.
			v, err, other = pv, herr, showRead(pv, perr)
		}
	} else {
		v, err, other = hv, herr, showRead(pv, perr)
	}
	same := r.Same
	if same == nil {
		same = func(a, b T) bool { return reflect.DeepEqual(a, b) }
	}
	if (herr == nil) != (perr == nil) || herr == nil && !same(hv, pv) {
		how = "disagree"
		alt = &altRead[T]{v: pv, unread: perr != nil}
		if paper {
			alt = &altRead[T]{v: hv, unread: herr != nil}
		}
	}
	if err != nil && how != "" {
		// An unread reply is a failure; the other reading is kept in its
		// reason so the disagreement is not lost.
		return v, "", "", alt, fmt.Errorf("%w (the other reader: %s)", err, other)
	}
	return v, how, other, alt, err
}

// besideJSON is what a JSON-mode reply states in text form: the decoded
// verdict v as "field: value" lines (numbers, and yes/no for booleans),
// then the reply's prose outside its JSON objects — what the text reader
// reads to find a field the prose states otherwise.
func besideJSON(v any, s string) string {
	var b strings.Builder
	if raw, err := json.Marshal(v); err == nil {
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				switch x := m[k].(type) {
				case float64:
					fmt.Fprintf(&b, "%s: %s\n", k, strconv.FormatFloat(x, 'f', -1, 64))
				case string:
					if len([]rune(x)) <= 12 {
						fmt.Fprintf(&b, "%s: %s\n", k, x) // a label ("grade": "B"), not prose
					}
				case bool:
					yn := "no"
					if x {
						yn = "yes"
					}
					fmt.Fprintf(&b, "%s: %s\n", k, yn)
				}
			}
		}
	}
	last := 0
	for _, sp := range jsonSpans(s) {
		b.WriteString("\n" + s[last:sp[0]])
		last = sp[1]
	}
	b.WriteString("\n" + s[last:])
	return b.String()
}

func decodeStated[T any](s string) (T, error) {
	var v T
	err := DecodeStated(s, &v)
	return v, err
}

func showRead(v any, err error) string {
	if err != nil {
		return "unread: " + err.Error()
	}
	return rundir.Show(v)
}

// withSchemaNote appends SchemaNote to the last user message, unless the
// prompt already asks for every required key of the schema by its quoted
// name (the authors' JSON prompts, which stay verbatim).
func withSchemaNote(msgs []localmodels.Message, schema json.RawMessage) []localmodels.Message {
	var sch struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &sch) == nil && len(sch.Required) > 0 {
		var all strings.Builder
		for _, m := range msgs {
			all.WriteString(m.Content)
		}
		asked := true
		for _, k := range sch.Required {
			asked = asked && strings.Contains(all.String(), `"`+k+`"`)
		}
		if asked {
			return msgs
		}
	}
	out := append([]localmodels.Message(nil), msgs...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "user" {
			out[i].Content += SchemaNote(schema)
			break
		}
	}
	return out
}

// DecodeJSON decodes the JSON verdict in raw into v: reasoning is removed,
// prose and fences around the object are tolerated, a missing field is not
// (every field of v without `omitempty` must be present), and two different
// objects are ambiguous (see DecodeStated).
func DecodeJSON(raw string, v any) error {
	s := StripReasoning(raw)
	if s == "" {
		return errors.New("empty reply")
	}
	return DecodeStated(s, v)
}

// Score names one decoded judge score for InRange.
type Score struct {
	Name  string
	Value int
}

// InRange is the range check judge verdicts run after decoding: each score
// must lie in lo..hi, else the reply is a parse failure (retried, then
// unscored), never a score.
func InRange(lo, hi int, scores ...Score) error {
	for _, s := range scores {
		if s.Value < lo || s.Value > hi {
			return fmt.Errorf("%s %d outside %d..%d", s.Name, s.Value, lo, hi)
		}
	}
	return nil
}
