package jsonpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/jsonscan"
)

const bookstore = `{ "store": {
    "book": [
      { "category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95 },
      { "category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99 },
      { "category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553-21311-3", "price": 8.99 },
      { "category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord of the Rings", "isbn": "0-395-19395-8", "price": 22.99 }
    ],
    "bicycle": { "color": "red", "price": 399 }
  },
  "o'k": 1, "a b": [10, 20], "esc\"aped": true, "ünï": null
}`

// selectJSON runs a JSONPath and returns the compacted values.
func selectJSON(t *testing.T, doc, path string) ([]string, error) {
	t.Helper()
	q, err := Parse(path)
	if err != nil {
		return nil, err
	}
	nodes, err := q.Select([]byte(doc))
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, n := range nodes {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(doc[n.Start:n.End])); err != nil {
			t.Fatalf("%s selected invalid JSON %q", path, doc[n.Start:n.End])
		}
		out = append(out, b.String())
	}
	return out, nil
}

func TestJSONPathRFC9535(t *testing.T) {
	books := []string{
		`{"category":"reference","author":"Nigel Rees","title":"Sayings of the Century","price":8.95}`,
		`{"category":"fiction","author":"Evelyn Waugh","title":"Sword of Honour","price":12.99}`,
		`{"category":"fiction","author":"Herman Melville","title":"Moby Dick","isbn":"0-553-21311-3","price":8.99}`,
		`{"category":"fiction","author":"J. R. R. Tolkien","title":"The Lord of the Rings","isbn":"0-395-19395-8","price":22.99}`,
	}
	authors := []string{`"Nigel Rees"`, `"Evelyn Waugh"`, `"Herman Melville"`, `"J. R. R. Tolkien"`}
	tests := []struct {
		path string
		want []string
	}{
		{`$.store.book[0].title`, []string{`"Sayings of the Century"`}},
		{`$['store']["book"][1]['author']`, []string{`"Evelyn Waugh"`}},
		{`$.store.book[*].author`, authors},
		{`$..author`, authors},
		{`$.store..price`, []string{"8.95", "12.99", "8.99", "22.99", "399"}},
		{`$..book[2]`, books[2:3]},
		{`$..book[-1]`, books[3:]},
		{`$..book[-5]`, []string{}},
		{`$..book[0,1]`, books[:2]},
		{`$..book[:2]`, books[:2]},
		{`$..book[1:]`, books[1:]},
		{`$..book[::-1]`, []string{books[3], books[2], books[1], books[0]}},
		{`$..book[3:0:-2]`, []string{books[3], books[1]}},
		{`$..book[?@.isbn]`, books[2:]},
		{`$..book[?!@.isbn].price`, []string{"8.95", "12.99"}},
		{`$..book[?@.price<10]`, []string{books[0], books[2]}},
		{`$..book[?@.price < 10 && @.category == 'fiction'].title`, []string{`"Moby Dick"`}},
		{`$..book[?@.price > 20 || @.author == "Nigel Rees"].price`, []string{"8.95", "22.99"}},
		{`$..book[?(@.price >= 12.99 && !(@.price > 20))].title`, []string{`"Sword of Honour"`}},
		{`$..book[?length(@.title) > 20].title`, []string{`"Sayings of the Century"`, `"The Lord of the Rings"`}},
		{`$..book[?count(@.*) == 5].title`, []string{`"Moby Dick"`, `"The Lord of the Rings"`}},
		{`$..book[?match(@.author, 'J.*')].author`, []string{`"J. R. R. Tolkien"`}},
		{`$..book[?search(@.title, "Dick|Rings")].price`, []string{"8.99", "22.99"}},
		{`$..book[?value(@.price) == 399]`, []string{}},
		{`$.store[?@.color == "red"]`, []string{`{"color":"red","price":399}`}},
		{`$..book[?@.price == $.store.book[0].price].title`, []string{`"Sayings of the Century"`}},
		{`$.store.bicycle[?@ == "red"]`, []string{`"red"`}},
		{`$.store.bicycle.*`, []string{`"red"`, "399"}},
		{`$['o\'k']`, []string{"1"}},
		{`$["a b"][1]`, []string{"20"}},
		{`$['esc"aped']`, []string{"true"}},
		{`$.ünï`, []string{"null"}},
		{`$.missing`, []string{}},
		{`$.store.book.title`, []string{}},
		{`$[0]`, []string{}},
		{`$`, []string{strings.Join(nil, "")}},
	}
	for _, tt := range tests {
		got, err := selectJSON(t, bookstore, tt.path)
		if err != nil {
			t.Errorf("%s: %v", tt.path, err)
			continue
		}
		if tt.path == "$" {
			if len(got) != 1 {
				t.Errorf("$ selected %d values", len(got))
			}
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.path, diff)
		}
	}
}

func TestJSONPathSlices(t *testing.T) {
	doc := `["a","b","c","d","e","f","g"]`
	tests := []struct {
		path string
		want string
	}{
		{`$[1:3]`, `"b","c"`},
		{`$[5:]`, `"f","g"`},
		{`$[1:5:2]`, `"b","d"`},
		{`$[5:1:-2]`, `"f","d"`},
		{`$[::-1]`, `"g","f","e","d","c","b","a"`},
		{`$[-2:]`, `"f","g"`},
		{`$[:100]`, `"a","b","c","d","e","f","g"`},
		{`$[1:5:0]`, ``},
		{`$[0, 0]`, `"a","a"`},
	}
	for _, tt := range tests {
		got, err := selectJSON(t, doc, tt.path)
		if err != nil || strings.Join(got, ",") != tt.want {
			t.Errorf("%s = %v, %v; want %s", tt.path, got, err, tt.want)
		}
	}
}

func TestJSONPathSyntaxErrors(t *testing.T) {
	tests := []struct{ path, want string }{
		{`store.book`, `starts at the root $, as in "$.store.book"`},
		{`[0]`, `as in "$[0]"`},
		{`$.`, "expected a member name"},
		{`$[`, "unexpected end"},
		{`$[01]`, "invalid integer"},
		{`$[-0]`, "invalid integer"},
		{`$[9007199254740992]`, "out of range"},
		{`$..`, "expected a member name"},
		{`$[?@.a ==]`, "expected @, $, a literal or a function at character 10"},
		{`$[?foo(@)]`, "unknown function foo()"},
		{`$[?@.a == @.*]`, "singular query"},
		{`$[?length(@.*) > 1]`, "must be a value"},
		{`$[?match(@.a)]`, "takes 2 argument(s)"},
		{`$[?length(@.a)]`, "returns a value"},
		{`$[?@.a == 1 &&]`, "expected @, $, a literal or a function"},
		{`$['a`, "unterminated string"},
		{`$["a\q"]`, `invalid escape \q`},
		{`$.a b`, "unexpected"},
		{`$[?1]`, "a literal alone is not a test"},
		{`$[?match(@.a, "(")]`, "invalid pattern"},
		{`$[?@.a == 1.]`, "invalid number at character 13"},
		{`$[?@.a == 01]`, "invalid number at character 11"},
		{`$[?@.a == 1e+]`, "invalid number at character 14"},
		{`$[?@.a == 1e999]`, "number out of range"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.path)
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v; want ErrSyntax containing %q", tt.path, err, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	_, err := Parse("$[")
	var e *Error
	if want := `jsonpath: invalid: unexpected end; close the bracket with ] at character 3 of "$["`; !errors.As(err, &e) || !errors.Is(err, ErrSyntax) || err.Error() != want {
		t.Errorf(`Parse("$[") = %v, want %q`, err, want)
	}
	q, err := Parse("$[*,*,*]")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Select([]byte("[1,2")); !errors.As(err, new(*jsonscan.Error)) {
		t.Errorf("Select on broken JSON = %v, want a *jsonscan.Error", err)
	}
	// Nine nodes from a budget of eight: the evaluation stops.
	d := []byte("[1,2,3]")
	ev := &jpEval{d: d, root: Node{0, len(d)}, budget: 8}
	ev.run(q, ev.root)
	if !errors.Is(ev.err, ErrTooManyNodes) || !strings.Contains(ev.err.Error(), "narrow it") {
		t.Errorf("nine nodes from a budget of eight: %v, want ErrTooManyNodes", ev.err)
	}
	ev = &jpEval{d: d, root: Node{0, len(d)}, budget: 9}
	if nodes := ev.run(q, ev.root); ev.err != nil || len(nodes) != 9 {
		t.Errorf("nine nodes from a budget of nine: %d, %v", len(nodes), ev.err)
	}
}
