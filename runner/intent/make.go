package intent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strings"

	"halu/runner/rundir"
)

// Article is one source document for building misinterpretation items.
// JSONL fields: id (or pmid), title, text (or abstract); optional question
// and answer (or long_answer), which make a Response Evaluation item (the
// question is the Query, the answer the Response).
type Article struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Text     string `json:"text"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// ReadArticles reads article JSONL; errors name the file and line (an
// rundir.InputError). Every article needs an ID, given once (the items
// made from it are named by it), and a text that is text.
func ReadArticles(path string) ([]Article, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("articles: %w", err)
	}
	defer f.Close()
	var out []Article
	ids := rundir.IDs{}
	err = rundir.ScanJSONL(f, path, func(line int, l []byte) error {
		var raw struct {
			ID         json.RawMessage `json:"id"`
			PMID       json.RawMessage `json:"pmid"`
			Title      string          `json:"title"`
			Text       string          `json:"text"`
			Abstract   string          `json:"abstract"`
			Question   string          `json:"question"`
			Answer     string          `json:"answer"`
			LongAnswer string          `json:"long_answer"`
		}
		if err := json.Unmarshal(l, &raw); err != nil {
			return err
		}
		a := Article{ID: idString(raw.ID), Title: raw.Title, Text: first(raw.Text, raw.Abstract),
			Question: raw.Question, Answer: first(raw.Answer, raw.LongAnswer)}
		if a.ID == "" {
			a.ID = idString(raw.PMID)
		}
		if a.ID == "" || strings.TrimSpace(a.Text) == "" {
			return errors.New("want an id (or pmid) and a text (or abstract)")
		}
		for _, f := range [][2]string{{"text", a.Text}, {"title", a.Title}, {"question", a.Question}, {"answer", a.Answer}} {
			if f[1] != "" {
				if err := rundir.CheckText(f[0], f[1]); err != nil {
					return err
				}
			}
		}
		if err := ids.Add(path, line, "article id", a.ID); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	if err == nil && len(out) == 0 {
		err = rundir.BadInput(path, 0, "no articles")
	}
	return out, err
}

func idString(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return strings.Trim(string(r), `" `)
}

// Task templates for generated items. Relationship and Response Evaluation
// are the queries of the paper's Table 2; the summary query is halu's (the
// paper describes the task, "summarizes and compares the articles", but
// prints no query for it).
const (
	RelationshipQuery = "For the following three articles, explain how Article 1 contradicts Article 2 but supports Article 3."
	SummaryQuery      = "Summarize the following three articles and compare their main points."
	ResponseEvalQuery = "How well does the given response answer the given query following the provided article?"
)

// MakeOptions control item generation.
type MakeOptions struct {
	Seed uint64
	// MinShared is how many distinct terms an article must share with each
	// of the other two of its group.
	MinShared int
	// Groups caps the number of three-article groups (0: as many as
	// possible); each group gives one relationship and one summary item.
	Groups int
	// ResponseEval caps the Response Evaluation items (0: one per article
	// with a question and an answer).
	ResponseEval int
	Topic        string
}

var termRE = regexp.MustCompile(`[\p{L}][\p{L}\p{N}-]{3,}`)

var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`about above after again against also although among another because been before being
below between both could does doing down during each either every few from further have having here however into itself
just many more most much must neither only other over same should since some such than that their theirs them then there
these they this those through under until upon very were what when where whether which while will with within without
would your results result methods method conclusions conclusion background objective objectives patients study studies
using used data analysis compared significant significantly group groups however associated respectively total years`) {
		stop[w] = true
	}
}

func terms(a Article) map[string]bool {
	out := map[string]bool{}
	for _, w := range termRE.FindAllString(strings.ToLower(a.Title+" "+a.Text), -1) {
		if !stop[w] {
			out[w] = true
		}
	}
	return out
}

func shared(a, b map[string]bool) int {
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// Make builds misinterpretation items from articles: groups of three
// related articles (a seed article and the two unused articles sharing the
// most terms with it, each at least MinShared), visited in a seeded order,
// give a relationship and a summary item each, with one article (chosen
// with the seed) marked missing; articles with a question and an answer
// give Response Evaluation items with one of Query, Article, Response
// missing. The same articles and seed give the same items.
func Make(arts []Article, o MakeOptions) []Input {
	rng := rand.New(rand.NewPCG(o.Seed, 0x6661697468))
	if o.MinShared <= 0 {
		o.MinShared = 3
	}
	ts := make([]map[string]bool, len(arts))
	for i, a := range arts {
		ts[i] = terms(a)
	}
	var out []Input
	used := make([]bool, len(arts))
	order := rng.Perm(len(arts))
	groups := 0
	for _, i := range order {
		if used[i] || (o.Groups > 0 && groups >= o.Groups) {
			continue
		}
		type cand struct{ j, n int }
		var cs []cand
		for j := range arts {
			if j != i && !used[j] {
				if n := shared(ts[i], ts[j]); n >= o.MinShared {
					cs = append(cs, cand{j, n})
				}
			}
		}
		sort.Slice(cs, func(a, b int) bool {
			if cs[a].n != cs[b].n {
				return cs[a].n > cs[b].n
			}
			return arts[cs[a].j].ID < arts[cs[b].j].ID
		})
		if len(cs) < 2 {
			continue
		}
		g := []int{i, cs[0].j, cs[1].j}
		for _, k := range g {
			used[k] = true
		}
		groups++
		ids := arts[g[0]].ID + "-" + arts[g[1]].ID + "-" + arts[g[2]].ID
		for _, t := range []struct{ task, query string }{{"relationship", RelationshipQuery}, {"summary", SummaryQuery}} {
			miss := rng.IntN(3)
			in := Input{ID: t.task + "-" + ids, Task: t.task, Topic: o.Topic, Query: t.query,
				Source: "halu intent make (" + map[string]string{"relationship": "query: paper Table 2", "summary": "query: halu"}[t.task] + ")"}
			for k, a := range g {
				p := Part{Label: fmt.Sprintf("Article %d", k+1), Missing: k == miss}
				if !p.Missing {
					p.Text = articleText(arts[a])
				}
				in.Articles = append(in.Articles, p)
			}
			out = append(out, in)
		}
	}
	n := 0
	for _, i := range order {
		a := arts[i]
		if strings.TrimSpace(a.Question) == "" || strings.TrimSpace(a.Answer) == "" {
			continue
		}
		if o.ResponseEval > 0 && n >= o.ResponseEval {
			break
		}
		n++
		miss := rng.IntN(3)
		parts := []Part{{Label: "Query", Text: a.Question}, {Label: "Article", Text: articleText(a)}, {Label: "Response", Text: a.Answer}}
		parts[miss].Missing, parts[miss].Text = true, ""
		out = append(out, Input{ID: "response_eval-" + a.ID, Task: "response_eval", Topic: o.Topic, Query: ResponseEvalQuery,
			Articles: parts, Source: "halu intent make (query: paper Table 2)"})
	}
	return out
}

func articleText(a Article) string {
	if t := strings.TrimSpace(a.Title); t != "" {
		return t + "\n" + strings.TrimSpace(a.Text)
	}
	return strings.TrimSpace(a.Text)
}
