package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/session"
)

// The recall evaluation: real pi 1.6 sessions (testdata/recall/sessions,
// recorded by testdata/recall/record.sh from real program output) and
// queries phrased the way a model half remembers a fact, each labelled
// with what answers it (testdata/recall/queries.tsv).

// evalQuery is one labelled query.
type evalQuery struct {
	session, query string
	answers        []string // pieces of the answering entries' text
	heldBack       bool
}

// heldBack keeps a quarter of the queries back, chosen by a fixed hash of
// the session and the query: nothing is tuned on them.
func heldBack(sessionName, query string) bool {
	h := fnv.New32a()
	h.Write([]byte(sessionName + "\t" + query))
	return h.Sum32()%4 == 0
}

func loadEvalQueries(t testing.TB) []evalQuery {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "recall", "queries.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unescape := strings.NewReplacer(`\n`, "\n", `\t`, "\t")
	var out []evalQuery
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			t.Fatalf("queries.tsv:%d: %d columns, want session, query, answers", n, len(cols))
		}
		q := evalQuery{session: cols[0], query: cols[1], heldBack: heldBack(cols[0], cols[1])}
		for _, a := range strings.Split(cols[2], " || ") {
			q.answers = append(q.answers, unescape.Replace(a))
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// evalEntryText is the model-visible text of an entry, its pieces joined
// by newlines (as a search result would show it).
func evalEntryText(e *session.Entry) string {
	var raw []byte
	switch e.Type {
	case "message":
		m := session.Member(e.Raw, "message")
		if role, _ := session.MemberString(m, "role"); role == "bashExecution" {
			raw = m
		} else {
			raw = session.Member(m, "content")
		}
	case "custom_message":
		raw = session.Member(e.Raw, "content")
	case "branch_summary":
		raw = session.Member(e.Raw, "summary")
	}
	var parts []string
	walkText(raw, func(t []byte) bool {
		parts = append(parts, string(t))
		return true
	})
	return strings.Join(parts, "\n")
}

// evalSession is one session of the set: its file and the entries that
// left the context on its branch (what recall may return).
type evalSession struct {
	path string
	left []*session.Entry
}

func openEvalSession(t testing.TB, name string) evalSession {
	t.Helper()
	path := filepath.Join("testdata", "recall", "sessions", name+".jsonl")
	f, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	branch, err := f.Branch("")
	if err != nil {
		t.Fatal(err)
	}
	in := map[*session.Entry]bool{}
	for _, e := range session.ContextEntries(branch) {
		in[e] = true
	}
	s := evalSession{path: path}
	for _, e := range branch {
		if !in[e] {
			s.left = append(s.left, e)
		}
	}
	return s
}

// answering returns the ids of the entries that left the context and
// hold one of the answers.
func (s evalSession) answering(q evalQuery) map[string]bool {
	out := map[string]bool{}
	for _, e := range s.left {
		text := evalEntryText(e)
		for _, a := range q.answers {
			if strings.Contains(text, a) {
				out[e.ID] = true
			}
		}
	}
	return out
}

// resultIDs are the entry ids of each result of a search answer, in rank
// order: "[k] entryId A" or, for a tool call with its result, "[k]
// entryId A + B".
var resultIDs = regexp.MustCompile(`(?m)^\[(\d+)\] entryId ([0-9a-zA-Z_-]+)(?: \+ ([0-9a-zA-Z_-]+))?`)

// evalRates are the share of queries whose answer is the first result,
// among the first five, and that get no result at all.
type evalRates struct {
	n, top1, top5, none int
}

func (r evalRates) String() string {
	pct := func(k int) float64 { return 100 * float64(k) / float64(max(r.n, 1)) }
	return fmt.Sprintf("%d queries: top-1 %.1f %%, top-5 %.1f %%, no answer %.1f %%", r.n, pct(r.top1), pct(r.top5), pct(r.none))
}

// rank runs the query against its session and returns the 1-based rank of
// the first result that answers it (0 when none of the first five does)
// and whether the search returned anything.
func evalRank(t testing.TB, e *Engine, s evalSession, q evalQuery, want map[string]bool) (int, bool, string) {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"query": q.query, "limit": 5})
	text, err := e.Recall(context.Background(), openReader, RecallRequest{SessionID: "eval", SessionFile: s.path, Args: raw})
	if err != nil {
		t.Fatal(err)
	}
	ms := resultIDs.FindAllStringSubmatch(text, -1)
	for k, m := range ms {
		if want[m[2]] || m[3] != "" && want[m[3]] {
			return k + 1, true, text
		}
	}
	return 0, len(ms) > 0, text
}

// TestRecallEval prints top-1, top-5 and no-answer rates on the held-back
// quarter and on the rest. RECALL_EVAL_MISSES=1 lists the misses of the
// rest (never of the held-back quarter). A label that answers nothing, or
// rates under the floors, fail the test.
func TestRecallEval(t *testing.T) {
	queries := loadEvalQueries(t)
	if len(queries) < 250 {
		t.Fatalf("%d labelled queries, want at least 250", len(queries))
	}
	sessions := map[string]evalSession{}
	e := New(Options{AgentDir: t.TempDir()})
	var held, rest evalRates
	misses := os.Getenv("RECALL_EVAL_MISSES") != ""
	for _, q := range queries {
		s, ok := sessions[q.session]
		if !ok {
			s = openEvalSession(t, q.session)
			sessions[q.session] = s
		}
		want := s.answering(q)
		if len(want) == 0 || len(want) > 6 {
			t.Errorf("%s %q: the label answers %d entries, want 1 to 6", q.session, q.query, len(want))
			continue
		}
		r := &rest
		if q.heldBack {
			r = &held
		}
		rank, any, text := evalRank(t, e, s, q, want)
		r.n++
		if rank == 1 {
			r.top1++
		}
		if rank >= 1 {
			r.top5++
		}
		if !any {
			r.none++
		}
		if misses && !q.heldBack && rank != 1 {
			first, _, _ := strings.Cut(text, "\n")
			t.Logf("miss (rank %d) %s %q: %s", rank, q.session, q.query, first)
		}
	}
	t.Logf("recall eval, held back: %v", held)
	t.Logf("recall eval, the rest:  %v", rest)
	// Floors well under what recall does (README: top-1 72 %, top-5 93 %,
	// no answer about 1 %), so that a change that loses answers fails.
	for name, r := range map[string]evalRates{"held back": held, "the rest": rest} {
		if r.top1*100 < 60*r.n || r.top5*100 < 85*r.n || r.none*100 > 5*r.n {
			t.Errorf("recall eval, %s: %v; want top-1 >= 60 %%, top-5 >= 85 %%, no answer <= 5 %%", name, r)
		}
	}
}
