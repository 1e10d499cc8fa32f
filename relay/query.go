package relay

import (
	"strings"
)

// maxQueryTerms bounds the terms of one query; the rest are ignored.
const maxQueryTerms = 16

// maxQueryBytes bounds the query text read.
const maxQueryBytes = 2000

// QueryTerm is one word of a query: every term must match (AND).
type QueryTerm struct {
	Text      string // lowercased
	Indexable bool   // false: checked against the text, not looked up
	Stem      string // a shorter form to match as a prefix ("exporting" -> "export"), or ""
}

// ParseQuery splits a query the way text is split (see tokenize): case,
// separators and camelCase do not matter, repeated words count once. A
// word that splits (emberCache) asks for its parts.
func ParseQuery(q string) []QueryTerm {
	if len(q) > maxQueryBytes {
		q = q[:maxQueryBytes]
	}
	var out []QueryTerm
	seen := map[string]bool{}
	words([]byte(q), func(word []byte, _ int) bool {
		var low []byte
		var parts []string
		emitWord(word, &low, false, func(t []byte) { parts = append(parts, string(t)) })
		for _, t := range parts {
			if seen[t] || len(out) >= maxQueryTerms {
				continue
			}
			seen[t] = true
			out = append(out, QueryTerm{Text: t, Indexable: indexable(t), Stem: stem(t)})
		}
		return len(out) < maxQueryTerms
	})
	return out
}

// suffixes a stem may lose, longest first.
var suffixes = []string{"ations", "ation", "ings", "ions", "ing", "ion", "ers", "ies", "ied", "ed", "es", "er", "ly", "s"}

// stem strips one common English suffix, keeping at least 4 letters.
func stem(t string) string {
	for _, s := range suffixes {
		if strings.HasSuffix(t, s) && len(t)-len(s) >= 4 {
			return t[:len(t)-len(s)]
		}
	}
	return ""
}

// matches reports how a text term answers a query term: 1 for the same
// word, 0.7 when the query is a prefix of it (3 letters at least), 0.5
// when the query's stem is, 0 otherwise.
func (q QueryTerm) matches(term string) float32 {
	switch {
	case term == q.Text:
		return 1
	case len(q.Text) >= 3 && strings.HasPrefix(term, q.Text):
		return 0.7
	case q.Stem != "" && strings.HasPrefix(term, q.Stem):
		return 0.5
	case !q.Indexable && len(term) < len(q.Text) && strings.HasPrefix(q.Text, term):
		// The index keeps only the start of a long hash.
		return 0.7
	}
	return 0
}
