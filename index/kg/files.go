package kg

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"halu/index"
)

// Reading the files a graph is imported from: PubTator documents (mentions,
// then relations between their entities) and edge tables with a header,
// each line checked and a bad one named by file and line.

// ErrFormat marks an input that is not a knowledge-graph file halu reads.
var ErrFormat error = inputError("not a knowledge-graph file halu reads (PubTator documents, relation2pubtator3, a TSV with pmid, x_id, y_id and a relation column, or an id/name table)")

// CheckFiles refuses (ErrFormat, naming the file) a file that Import would
// refuse, reading its first lines only: an import checks its files before
// it creates or changes a store.
func CheckFiles(files []string) error {
	for _, f := range files {
		if _, err := readKGFile(f, sniffLines, func(edgeRow) error { return nil }, func(mention) error { return nil }, func(index.Problem) {}); err != nil {
			return err
		}
	}
	return nil
}

// sniffLines is how many lines of a file Import reads to recognise it.
const sniffLines = 200

// relTypeRE is what a relation type looks like (Association,
// Positive_Correlation, treat): a damaged mention line read as a relation
// has a number there.
var relTypeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z_]*$`)

// kgCounts are what a file gave: edge rows and mentions.
type kgCounts struct{ rows, mentions int }

// readKGFile streams the edges and mentions of one file (its first
// maxLines lines when maxLines > 0) to emitRow and emitMention, and the
// lines it skips to bad; an error of an emit function stops it. A file
// with lines but neither edges nor mentions among them is an ErrFormat.
// Only one PubTator document is held at a time.
func readKGFile(path string, maxLines int, emitRow func(edgeRow) error, emitMention func(mention) error, problem func(index.Problem)) (kgCounts, error) {
	f, err := os.Open(path)
	if err != nil {
		return kgCounts{}, err
	}
	defer f.Close()
	r := &kgReader{path: path, emitRow: emitRow, emitMention: emitMention, problem: problem, docTypes: map[string]string{}}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 64<<20)
	nonEmpty := 0
	for s.Scan() {
		r.line++
		if maxLines > 0 && r.line > maxLines || r.emitErr != nil {
			break
		}
		text := strings.TrimRight(s.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		nonEmpty++
		r.read(text)
	}
	r.flushDoc()
	if r.emitErr != nil {
		return r.n, r.emitErr
	}
	if err := s.Err(); err != nil {
		return r.n, fmt.Errorf("%s:%d: %w", path, r.line, err)
	}
	if nonEmpty > 0 && r.n.rows == 0 && r.n.mentions == 0 && r.header == nil {
		return r.n, fmt.Errorf("%s: %w", path, ErrFormat)
	}
	return r.n, nil
}

// kgReader reads one knowledge-graph file, line by line: a table with a
// header (edges with x_id, or a name table), or PubTator documents
// (mentions, then relations between their entities).
type kgReader struct {
	path        string
	emitRow     func(edgeRow) error
	emitMention func(mention) error
	problem     func(index.Problem)
	emitErr     error
	n           kgCounts
	line        int
	header      map[string]int
	// curDoc is the PubTator document being read, docTypes its entities'
	// types (bare id → type), pending its relation lines.
	curDoc   string
	docTypes map[string]string
	pending  []edgeRow
}

func (r *kgReader) bad(line int, reason string) {
	r.problem(index.Problem{File: r.path, Line: line, Reason: reason})
}

func (r *kgReader) addRow(e edgeRow) {
	if r.emitErr != nil {
		return
	}
	if e.pubtator {
		e.rel = RelationLabel(e.rel, e.head, e.tail)
	}
	r.n.rows++
	r.emitErr = r.emitRow(e)
}

func (r *kgReader) addMention(m mention) {
	if r.emitErr != nil {
		return
	}
	r.n.mentions++
	r.emitErr = r.emitMention(m)
}

// flushDoc emits the current document's relations, each entity typed by
// the document's mentions.
func (r *kgReader) flushDoc() {
	for _, e := range r.pending {
		h := typed(r.docTypes, e.head)
		t := typed(r.docTypes, e.tail)
		if unknownType(h) || unknownType(t) {
			r.bad(e.line, fmt.Sprintf("relation of PMID %d names %s and %s; the document mentions no entity of that id", e.pmid, e.head, e.tail))
			continue
		}
		e.head, e.tail = orient(h, t)
		r.addRow(e)
	}
	r.pending = r.pending[:0]
	clear(r.docTypes)
}

// read reads one line that is not empty.
func (r *kgReader) read(text string) {
	if p := strings.Index(text, "|t|"); p > 0 && !strings.Contains(text[:p], "\t") {
		r.flushDoc()
		r.curDoc = text[:p]
		return
	}
	if p := strings.Index(text, "|a|"); p > 0 && !strings.Contains(text[:p], "\t") {
		return
	}
	cols := strings.Split(text, "\t")
	if r.line == 1 || r.header == nil && strings.Contains(strings.ToLower(text), "x_id") {
		low := strings.ToLower(text)
		if strings.Contains(low, "pmid") && (strings.Contains(low, "x_id") || strings.Contains(low, "\tname")) || strings.HasPrefix(low, "id\tname") {
			r.header = map[string]int{}
			for i, c := range cols {
				r.header[strings.ToLower(strings.TrimSpace(c))] = i
			}
			return
		}
	}
	switch {
	case r.header != nil:
		r.tableRow(cols)
	case len(cols) == 6 && isDigits(cols[1]) && isDigits(cols[2]):
		r.mentionLine(cols)
	case len(cols) >= 4 && isDigits(cols[0]):
		r.relationLine(cols)
	default:
		r.bad(r.line, fmt.Sprintf("unrecognised line (%d columns)", len(cols)))
	}
}

// tableRow reads a row of a table with a header: an edge (x_id …) or a
// name (id, name, type).
func (r *kgReader) tableRow(cols []string) {
	if _, ok := r.header["x_id"]; ok {
		e, err := headerRow(r.header, cols)
		if err != nil {
			r.bad(r.line, err.Error())
			return
		}
		r.addRow(e)
		return
	}
	ni, ok := r.header["name"]
	if !ok {
		return
	}
	ii, ok := r.header["id"]
	if !ok || ni >= len(cols) || ii >= len(cols) {
		r.bad(r.line, "name table row without id and name")
		return
	}
	typ := ""
	if ti, ok := r.header["type"]; ok && ti < len(cols) {
		typ = cols[ti]
	}
	r.addMention(mention{id: NormalizeID(typ, cols[ii]), typ: NormalizeType(typ), name: cols[ni]})
}

// mentionLine reads a PubTator mention: PMID start end text type id(s).
func (r *kgReader) mentionLine(cols []string) {
	if cols[0] != r.curDoc && r.curDoc != "" {
		r.flushDoc()
		r.curDoc = cols[0]
	}
	typ := NormalizeType(cols[4])
	for _, id := range splitIDs(cols[5]) {
		r.docTypes[id] = typ
		r.addMention(mention{id: NormalizeID(typ, id), typ: typ, name: cols[3]})
	}
}

// relationLine reads a PubTator relation: PMID type id id. Typed ids
// (relation2pubtator3) are an edge at once; bare ones wait for their
// document's mentions to type them.
func (r *kgReader) relationLine(cols []string) {
	if !relTypeRE.MatchString(cols[1]) || strings.TrimSpace(cols[2]) == "" || strings.TrimSpace(cols[3]) == "" {
		r.bad(r.line, fmt.Sprintf("not a relation line (type %q, ids %q and %q): a damaged line?", cols[1], cols[2], cols[3]))
		return
	}
	pmid, _ := strconv.ParseUint(cols[0], 10, 64)
	e := edgeRow{pmid: pmid, rel: cols[1], head: cols[2], tail: cols[3], pubtator: true, line: r.line}
	_, _, typedHead := splitTyped(e.head)
	_, _, typedTail := splitTyped(e.tail)
	if typedHead && typedTail {
		e.head, e.tail = orient(NormalizeID("", e.head), NormalizeID("", e.tail))
		r.addRow(e)
		return
	}
	if cols[0] != r.curDoc && r.curDoc != "" {
		r.flushDoc()
	}
	r.curDoc = cols[0]
	r.pending = append(r.pending, e)
}

// unknownType reports whether a typed id got no type from its document.
func unknownType(id string) bool { return strings.HasPrefix(id, "Unknown|") }

// typed gives a bare PubTator id its type from the document's mentions.
func typed(types map[string]string, id string) string {
	if _, _, ok := splitTyped(id); ok {
		return NormalizeID("", id)
	}
	typ := types[id]
	if typ == "" {
		// A variant relation names a variant by several of its mention's
		// ids joined ("RS#:121434568;HGVS:p.L858R;CorrespondingGene:1956").
		for _, part := range splitIDs(id) {
			if t := types[part]; t != "" {
				typ = t
				break
			}
		}
	}
	if typ == "" {
		typ = "Unknown"
	}
	return NormalizeID(typ, id)
}

func splitIDs(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		p = strings.TrimSpace(p)
		if p != "" && p != "-" {
			out = append(out, p)
		}
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func headerRow(h map[string]int, cols []string) (edgeRow, error) {
	get := func(name string) string {
		if i, ok := h[name]; ok && i < len(cols) {
			return strings.TrimSpace(cols[i])
		}
		return ""
	}
	pmid, err := strconv.ParseUint(get("pmid"), 10, 64)
	if err != nil {
		return edgeRow{}, fmt.Errorf("pmid %q is not a number", get("pmid"))
	}
	x, y := get("x_id"), get("y_id")
	if x == "" || y == "" {
		return edgeRow{}, errors.New("x_id or y_id empty")
	}
	if _, _, ok := splitTyped(x); !ok {
		x = NormalizeID(get("x_type"), x)
	}
	if _, _, ok := splitTyped(y); !ok {
		y = NormalizeID(get("y_type"), y)
	}
	rel := get("pubtator3_relation")
	if rel == "" {
		rel = get("relation")
	}
	if rel == "" {
		rel = get("truthhypo_label")
	}
	if rel == "" {
		return edgeRow{}, errors.New("no relation")
	}
	return edgeRow{pmid: pmid, rel: rel, head: NormalizeID("", x), tail: NormalizeID("", y)}, nil
}
