// Package index is halu's literature store: an on-disk BM25 index of PubMed
// (titles and abstracts, PMID-filterable) built from PubMed XML and JSONL,
// with the exact top k of a query walked over the postings (MaxScore,
// windows, all cores). Suites see it only through the Searcher type; the
// bytes of bleve's segment format it writes and reads directly live in
// index/internal/zapv17, and the knowledge graph in index/kg.
package index

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Article is one PubMed record as halu indexes it.
type Article struct {
	PMID     uint64 `json:"pmid"`
	Title    string `json:"title"`
	Abstract string `json:"abstract"`
	Year     int    `json:"year,omitempty"`
}

// Op is what an input record asks of the index: add (or replace) an article,
// or delete one (PubMed update files' DeleteCitation).
type Op struct {
	Article Article
	Delete  bool
}

// Problem is a record or file that could not be used, with where it is.
type Problem struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc += fmt.Sprintf(":%d", p.Line)
	}
	if p.Offset > 0 {
		loc += fmt.Sprintf(" (byte %d)", p.Offset)
	}
	return loc + ": " + p.Reason
}

// ErrNoContent marks a record with neither title nor abstract.
var ErrNoContent = errors.New("no title and no abstract")

// ReadInput streams the records of one input file to emit, in file order:
// PubMed XML (.xml, .xml.gz: PubmedArticleSet with PubmedArticle,
// PubmedBookArticle and DeleteCitation) or JSON Lines (.jsonl, .jsonl.gz:
// {"pmid","title","abstract","year"}). A bad record is reported to problem
// and skipped; damage that ends the file (broken XML, truncated gzip) is
// returned as an error after everything before it was emitted.
func ReadInput(path string, emit func(Op) error, problem func(Problem)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<20)
	name := strings.TrimSuffix(path, ".gz")
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("%s: gzip: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	switch {
	case strings.HasSuffix(name, ".xml"):
		return readPubmedXML(path, r, emit, problem)
	case strings.HasSuffix(name, ".jsonl"), strings.HasSuffix(name, ".ndjson"):
		return readJSONL(path, r, emit, problem)
	}
	return fmt.Errorf("%s: unknown input type (want .xml, .xml.gz, .jsonl or .jsonl.gz)", path)
}

type xmlText struct {
	Inner string `xml:",innerxml"`
}

type abstractText struct {
	Label string `xml:"Label,attr"`
	Inner string `xml:",innerxml"`
}

type pubDate struct {
	Year        string `xml:"Year"`
	MedlineDate string `xml:"MedlineDate"`
}

type xmlArticle struct {
	PMID     string         `xml:"MedlineCitation>PMID"`
	Title    xmlText        `xml:"MedlineCitation>Article>ArticleTitle"`
	Abstract []abstractText `xml:"MedlineCitation>Article>Abstract>AbstractText"`
	PubDate  pubDate        `xml:"MedlineCitation>Article>Journal>JournalIssue>PubDate"`
	ArtYear  string         `xml:"MedlineCitation>Article>ArticleDate>Year"`
	Complete string         `xml:"MedlineCitation>DateCompleted>Year"`
}

type xmlBook struct {
	PMID      string         `xml:"BookDocument>PMID"`
	Title     xmlText        `xml:"BookDocument>ArticleTitle"`
	BookTitle xmlText        `xml:"BookDocument>Book>BookTitle"`
	Abstract  []abstractText `xml:"BookDocument>Abstract>AbstractText"`
	Year      string         `xml:"BookDocument>Book>PubDate>Year"`
}

type xmlDelete struct {
	PMIDs []string `xml:"PMID"`
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// cleanXML turns inner XML (with markup such as <i> or <sup>, and entities
// such as &lt;) into plain text with single spaces.
func cleanXML(s string) string {
	s = tagRE.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	return strings.Join(strings.Fields(s), " ")
}

func joinAbstract(parts []abstractText) string {
	var b strings.Builder
	for _, p := range parts {
		t := cleanXML(p.Inner)
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if p.Label != "" {
			b.WriteString(p.Label)
			b.WriteString(": ")
		}
		b.WriteString(t)
	}
	return b.String()
}

var yearRE = regexp.MustCompile(`\b(1[89]\d\d|20\d\d)\b`)

func parseYear(candidates ...string) int {
	for _, c := range candidates {
		if m := yearRE.FindString(c); m != "" {
			y, _ := strconv.Atoi(m)
			return y
		}
	}
	return 0
}

func parsePMID(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("no PMID")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("PMID %q is not a positive number", s)
	}
	return n, nil
}

// recordTags are the elements of a PubmedArticleSet that halu reads, each
// decoded on its own so that one malformed record costs only itself.
var recordTags = []string{"PubmedArticle", "PubmedBookArticle", "DeleteCitation"}

// pmidRE finds a record's PMID in raw XML, to name a record that does not
// parse.
var pmidRE = regexp.MustCompile(`<PMID[^>]*>\s*(\d+)\s*</PMID>`)

// readPubmedXML reads the records of a PubMed XML file one at a time: the
// stream is cut at each record's start tag and the record ends at its end
// tag or at the next record's start, whichever comes first. A record that
// does not parse (a broken tag, a missing end tag) is reported with its
// file:line:byte and PMID and skipped; every intact record around it is
// kept. Damage to the stream itself (a truncated gzip) ends the file with
// an error after what came before it was emitted.
func readPubmedXML(path string, r io.Reader, emit func(Op) error, problem func(Problem)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	var offset int64 // bytes consumed before the current scan data
	line := 1        // line at offset
	var recOffset int64
	recLine := 0
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		consume := func(from, to int) {
			line += bytes.Count(data[from:to], []byte{'\n'})
			offset += int64(to - from)
		}
		start, tag := nextRecord(data, 0)
		if start < 0 {
			// Keep a tail that may hold the start of a cut start tag.
			keep := 0
			if !atEOF {
				keep = min(len(data), len("<PubmedBookArticle>"))
			}
			consume(0, len(data)-keep)
			return len(data) - keep, nil, nil
		}
		end := -1
		closeTag := []byte("</" + tag + ">")
		if i := bytes.Index(data[start:], closeTag); i >= 0 {
			end = start + i + len(closeTag)
		}
		if next, _ := nextRecord(data, start+1); next >= 0 && (end < 0 || next < end) {
			end = next // the record never closed before the next began
		}
		if end < 0 {
			if !atEOF {
				consume(0, start)
				return start, nil, nil // more data, from the record's start
			}
			end = len(data) // cut off by the end of the file
		}
		consume(0, start)
		recOffset, recLine = offset, line
		consume(start, end)
		return end, data[start:end], nil
	})
	for sc.Scan() {
		rec := sc.Bytes()
		at := Problem{File: path, Line: recLine, Offset: recOffset}
		if err := readRecord(rec, at, emit, problem); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d (byte %d): %w", path, line, offset, err)
	}
	return nil
}

// nextRecord finds the first record start tag in data at or after from:
// its index and element name, or -1. It looks at each "<" once, so reading
// a file costs time linear in its size.
func nextRecord(data []byte, from int) (int, string) {
	for at := from; at < len(data); {
		i := bytes.IndexByte(data[at:], '<')
		if i < 0 {
			return -1, ""
		}
		i += at
		for _, tag := range recordTags {
			j := i + 1 + len(tag)
			// "<PubmedArticle" is also the start of "<PubmedArticleSet".
			if j < len(data) && string(data[i+1:j]) == tag && isTagEnd(data[j]) {
				return i, tag
			}
		}
		at = i + 1
	}
	return -1, ""
}

func isTagEnd(c byte) bool {
	return c == '>' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/'
}

// readRecord decodes one record and emits what it asks of the index.
func readRecord(rec []byte, at Problem, emit func(Op) error, problem func(Problem)) error {
	dec := xml.NewDecoder(bytes.NewReader(rec))
	dec.Strict = true
	malformed := func(err error) {
		l, _ := dec.InputPos()
		p := at
		p.Line = at.Line + l - 1
		p.Offset = at.Offset + dec.InputOffset()
		p.Reason = "malformed record, skipped: " + err.Error()
		if m := pmidRE.FindSubmatch(rec); m != nil {
			p.Reason = "PMID " + string(m[1]) + ": " + p.Reason
		}
		problem(p)
	}
	tok, err := dec.Token()
	if err != nil {
		malformed(err)
		return nil
	}
	se, ok := tok.(xml.StartElement)
	if !ok {
		malformed(fmt.Errorf("no record element"))
		return nil
	}
	decode := func(v any) bool {
		if err := dec.DecodeElement(v, &se); err != nil {
			malformed(err)
			return false
		}
		return true
	}
	var pmidText string
	var art Article
	switch se.Name.Local {
	case "PubmedArticle":
		var a xmlArticle
		if !decode(&a) {
			return nil
		}
		pmidText, art = a.PMID, Article{Title: cleanXML(a.Title.Inner), Abstract: joinAbstract(a.Abstract),
			Year: parseYear(a.PubDate.Year, a.PubDate.MedlineDate, a.ArtYear, a.Complete)}
	case "PubmedBookArticle":
		var b xmlBook
		if !decode(&b) {
			return nil
		}
		title := cleanXML(b.Title.Inner)
		if title == "" {
			title = cleanXML(b.BookTitle.Inner)
		}
		pmidText, art = b.PMID, Article{Title: title, Abstract: joinAbstract(b.Abstract), Year: parseYear(b.Year)}
	case "DeleteCitation":
		var d xmlDelete
		if !decode(&d) {
			return nil
		}
		for _, s := range d.PMIDs {
			pmid, err := parsePMID(s)
			if err != nil {
				at.Reason = "DeleteCitation: " + err.Error()
				problem(at)
				continue
			}
			if err := emit(Op{Article: Article{PMID: pmid}, Delete: true}); err != nil {
				return err
			}
		}
		return nil
	default:
		return nil
	}
	pmid, err := parsePMID(pmidText)
	if err != nil {
		at.Reason = err.Error()
		problem(at)
		return nil
	}
	art.PMID = pmid
	return emitArticle(art, at, emit, problem)
}

func emitArticle(a Article, at Problem, emit func(Op) error, problem func(Problem)) error {
	if a.Title == "" && a.Abstract == "" {
		at.Reason = fmt.Sprintf("PMID %d: %v", a.PMID, ErrNoContent)
		problem(at)
		return nil
	}
	return emit(Op{Article: a})
}

type jsonArticle struct {
	PMID     json.RawMessage `json:"pmid"`
	Title    string          `json:"title"`
	Abstract string          `json:"abstract"`
	Year     json.RawMessage `json:"year"`
}

func readJSONL(path string, r io.Reader, emit func(Op) error, problem func(Problem)) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		start := off
		off += int64(len(line))
		if len(bytes.TrimSpace(line)) > 0 {
			at := Problem{File: path, Line: n, Offset: start}
			var uerr error
			var j jsonArticle
			if !decodeArticleLine(line, &j) {
				j = jsonArticle{}
				uerr = json.Unmarshal(line, &j)
			}
			if uerr != nil {
				at.Reason = "not a JSON object: " + uerr.Error()
				problem(at)
			} else if pmid, perr := parsePMID(strings.Trim(string(j.PMID), `"`)); perr != nil {
				at.Reason = perr.Error()
				problem(at)
			} else {
				a := Article{PMID: pmid, Title: strings.TrimSpace(j.Title), Abstract: strings.TrimSpace(j.Abstract),
					Year: parseYear(strings.Trim(string(j.Year), `"`))}
				if eerr := emitArticle(a, at, emit, problem); eerr != nil {
					return eerr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d (byte %d): %w", path, n, off, err)
		}
	}
}

// decodeArticleLine decodes the JSON object of one JSONL line into j as
// encoding/json does, for the lines halu's inputs hold: keys exactly
// "pmid", "title", "abstract" and "year", strings whose escapes are JSON's
// short ones or \u outside the surrogates, in valid UTF-8, and plain
// positive integers. It reports false, having maybe written to j, for any
// other line, which then goes to encoding/json (TestDecodeArticleLine
// holds the two to the same result); a build spent a twelfth of its time
// in encoding/json's reflection.
func decodeArticleLine(line []byte, j *jsonArticle) bool {
	p := jsonSpace(line, 0)
	if p >= len(line) || line[p] != '{' {
		return false
	}
	p = jsonSpace(line, p+1)
	if p < len(line) && line[p] == '}' {
		return jsonSpace(line, p+1) == len(line)
	}
	for {
		key, q, ok := jsonPlainString(line, p)
		if !ok {
			return false
		}
		p = jsonSpace(line, q)
		if p >= len(line) || line[p] != ':' {
			return false
		}
		p = jsonSpace(line, p+1)
		switch string(key) {
		case "title", "abstract":
			var s string
			if s, p, ok = jsonString(line, p); !ok {
				return false
			}
			if key[0] == 't' {
				j.Title = s
			} else {
				j.Abstract = s
			}
		case "pmid", "year":
			var raw []byte
			if p < len(line) && line[p] == '"' {
				var q int
				if _, q, ok = jsonPlainString(line, p); !ok {
					return false
				}
				raw, p = line[p:q], q
			} else {
				q := p
				for q < len(line) && line[q] >= '0' && line[q] <= '9' {
					q++
				}
				if q == p || line[p] == '0' {
					return false
				}
				raw, p = line[p:q], q
			}
			raw = append(json.RawMessage(nil), raw...)
			if key[0] == 'p' {
				j.PMID = raw
			} else {
				j.Year = raw
			}
		default:
			// Another key encoding/json would ignore: it matches field
			// names without regard to case.
			for _, name := range []string{"pmid", "title", "abstract", "year"} {
				if strings.EqualFold(string(key), name) {
					return false
				}
			}
			if p, ok = jsonSkipStrings(line, p); !ok {
				return false
			}
		}
		p = jsonSpace(line, p)
		if p >= len(line) {
			return false
		}
		switch line[p] {
		case ',':
			p = jsonSpace(line, p+1)
		case '}':
			return jsonSpace(line, p+1) == len(line)
		default:
			return false
		}
	}
}

// jsonSkipStrings skips a string or an array of strings at p (strings
// as jsonString reads them).
func jsonSkipStrings(b []byte, p int) (int, bool) {
	var ok bool
	if p < len(b) && b[p] == '"' {
		_, p, ok = jsonString(b, p)
		return p, ok
	}
	if p >= len(b) || b[p] != '[' {
		return 0, false
	}
	p = jsonSpace(b, p+1)
	if p < len(b) && b[p] == ']' {
		return p + 1, true
	}
	for {
		if _, p, ok = jsonString(b, p); !ok {
			return 0, false
		}
		p = jsonSpace(b, p)
		if p >= len(b) {
			return 0, false
		}
		switch b[p] {
		case ',':
			p = jsonSpace(b, p+1)
		case ']':
			return p + 1, true
		default:
			return 0, false
		}
	}
}

// jsonSpace skips JSON whitespace from p.
func jsonSpace(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\t' || b[p] == '\n' || b[p] == '\r') {
		p++
	}
	return p
}

// jsonPlainString reads a string at p with no escape and only printable
// ASCII in it; it returns the contents and the position after it.
func jsonPlainString(b []byte, p int) ([]byte, int, bool) {
	if p >= len(b) || b[p] != '"' {
		return nil, 0, false
	}
	for q := p + 1; q < len(b); q++ {
		switch c := b[q]; {
		case c == '"':
			return b[p+1 : q], q + 1, true
		case c == '\\' || c < ' ' || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// jsonString reads a string at p: valid UTF-8, no control character,
// escapes \" \\ \/ \b \f \n \r \t and \uXXXX outside the surrogates.
func jsonString(b []byte, p int) (string, int, bool) {
	if p >= len(b) || b[p] != '"' {
		return "", 0, false
	}
	start := p + 1
	end, escaped := -1, false
	for q := start; q < len(b); q++ {
		if c := b[q]; c == '"' {
			end = q
			break
		} else if c == '\\' {
			escaped = true
			q++ // the escaped character cannot end the string
		} else if c < ' ' {
			return "", 0, false
		}
	}
	if end < 0 || !utf8.Valid(b[start:end]) {
		return "", 0, false
	}
	if !escaped {
		return string(b[start:end]), end + 1, true
	}
	out := make([]byte, 0, end-start)
	for q := start; q < end; q++ {
		c := b[q]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		q++
		switch b[q] {
		case '"', '\\', '/':
			out = append(out, b[q])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if q+4 >= end {
				return "", 0, false
			}
			v, err := strconv.ParseUint(string(b[q+1:q+5]), 16, 32)
			if err != nil || utf16.IsSurrogate(rune(v)) {
				return "", 0, false
			}
			out = utf8.AppendRune(out, rune(v))
			q += 4
		default:
			return "", 0, false
		}
	}
	return string(out), end + 1, true
}
