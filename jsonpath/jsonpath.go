// Package jsonpath runs RFC 9535 JSONPath queries over JSON text, selecting values by their byte ranges without decoding the rest of the document.
package jsonpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonscan"
)

// JSONPath (RFC 9535): names, indices, slices, wildcards, unions,
// descendants and filters with comparisons, &&, ||, !, existence tests and
// the functions length, count, match, search and value. Regexes of match and
// search are I-Regexp, run by Go's RE2.

// The causes of an *Error: a query that is not JSONPath, or one that selects
// more than 5,000,000 nodes of a document.
var (
	ErrSyntax       = errors.New("jsonpath: invalid")
	ErrTooManyNodes = errors.New("jsonpath: too many nodes")
)

// Error says what is wrong with a query, for people; errors.Is finds its
// cause, ErrSyntax or ErrTooManyNodes.
type Error struct {
	Err error  // ErrSyntax or ErrTooManyNodes
	Msg string // what is wrong, and where in the query
}

func (e *Error) Error() string { return e.Err.Error() + ": " + e.Msg }

// Unwrap makes errors.Is(err, e.Err) true.
func (e *Error) Unwrap() error { return e.Err }

// Query is a parsed JSONPath query.
type Query struct {
	root byte // '$' or '@'
	segs []jpSegment
}

type jpSegment struct {
	desc bool
	sels []jpSelector
}

const (
	selName = iota
	selWild
	selIndex
	selSlice
	selFilter
)

type jpSelector struct {
	kind             int
	name             string
	index            int64
	start, end, step int64
	hasStart, hasEnd bool
	filter           jpExpr
}

// Filter expressions.
type jpExpr interface{}

type (
	jpOr  struct{ xs []jpExpr }
	jpAnd struct{ xs []jpExpr }
	jpNot struct{ x jpExpr }
	jpCmp struct {
		op   string
		l, r jpOperand
	}
	jpTest struct {
		q  *Query
		fn *jpFunc
	}
)

// jpOperand is a literal, a singular query or a function call.
type jpOperand struct {
	lit   *jv
	query *Query
	fn    *jpFunc
}

type jpFunc struct {
	name string
	args []jpArg
	re   *regexp.Regexp // match/search with a literal pattern, compiled once
}

type jpArg struct {
	lit   *jv
	query *Query
	fn    *jpFunc
	expr  jpExpr // a logical expression argument
}

// jv is a JSON value in a filter: a scalar, a node of the document, or Nothing.
type jv struct {
	kind byte // 0 nothing, 'n' null, 'b' bool, 'f' number, 's' string, 'o' object/array
	b    bool
	f    float64
	s    string
	node Node
}

// Node is a value of a document: the bytes d[Start:End].
type Node struct{ Start, End int }

const maxJPDepth = 64

type jpParser struct {
	src   string
	pos   int
	depth int
}

func (p *jpParser) errf(format string, a ...any) error {
	return &Error{ErrSyntax, fmt.Sprintf("%s at character %d of %q", fmt.Sprintf(format, a...), p.pos+1, clip.Echo(p.src))}
}

// Parse parses an RFC 9535 query. Its errors are *Error, with the cause
// ErrSyntax.
func Parse(src string) (*Query, error) {
	p := &jpParser{src: src}
	if !strings.HasPrefix(src, "$") {
		hint := "$." + strings.TrimLeft(src, ".")
		if strings.HasPrefix(src, "[") {
			hint = "$" + src
		}
		return nil, &Error{ErrSyntax, fmt.Sprintf("a JSONPath starts at the root $, as in %q", clip.Echo(hint))}
	}
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.src) {
		return nil, p.errf("unexpected %q", p.src[p.pos:p.pos+1])
	}
	return q, nil
}

func (p *jpParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *jpParser) ws() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\n\r", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

// query parses "$" or "@" and its segments.
func (p *jpParser) query() (*Query, error) {
	q := &Query{root: p.src[p.pos]}
	p.pos++
	for {
		save := p.pos
		p.ws()
		switch {
		case strings.HasPrefix(p.src[p.pos:], ".."):
			p.pos += 2
			seg, err := p.afterDot(true)
			if err != nil {
				return nil, err
			}
			q.segs = append(q.segs, seg)
		case p.peek() == '.':
			p.pos++
			seg, err := p.afterDot(false)
			if err != nil {
				return nil, err
			}
			q.segs = append(q.segs, seg)
		case p.peek() == '[':
			sels, err := p.bracket()
			if err != nil {
				return nil, err
			}
			q.segs = append(q.segs, jpSegment{sels: sels})
		default:
			p.pos = save
			return q, nil
		}
	}
}

func (p *jpParser) afterDot(desc bool) (jpSegment, error) {
	switch c := p.peek(); {
	case c == '*':
		p.pos++
		return jpSegment{desc: desc, sels: []jpSelector{{kind: selWild}}}, nil
	case c == '[' && desc:
		sels, err := p.bracket()
		return jpSegment{desc: true, sels: sels}, err
	default:
		name := p.shorthand()
		if name == "" {
			return jpSegment{}, p.errf("expected a member name, * or [ after '.'; quote other names as ['name']")
		}
		return jpSegment{desc: desc, sels: []jpSelector{{kind: selName, name: name}}}, nil
	}
}

func (p *jpParser) shorthand() string {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80 || p.pos > start && '0' <= c && c <= '9' {
			if c >= 0x80 {
				_, n := utf8.DecodeRuneInString(p.src[p.pos:])
				p.pos += n
				continue
			}
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos]
}

func (p *jpParser) bracket() ([]jpSelector, error) {
	p.pos++ // '['
	var sels []jpSelector
	for {
		p.ws()
		sel, err := p.selector()
		if err != nil {
			return nil, err
		}
		sels = append(sels, sel)
		p.ws()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case ']':
			p.pos++
			return sels, nil
		default:
			return nil, p.errf("expected ',' or ']'")
		}
	}
}

func (p *jpParser) selector() (jpSelector, error) {
	switch c := p.peek(); {
	case c == '\'' || c == '"':
		s, err := p.stringLit()
		return jpSelector{kind: selName, name: s}, err
	case c == '*':
		p.pos++
		return jpSelector{kind: selWild}, nil
	case c == '?':
		p.pos++
		p.ws()
		e, err := p.logical()
		return jpSelector{kind: selFilter, filter: e}, err
	case c == ':' || c == '-' || '0' <= c && c <= '9':
		var sel jpSelector
		var err error
		if sel.start, sel.hasStart, err = p.optInteger(); err != nil {
			return sel, err
		}
		p.ws()
		if p.peek() != ':' {
			if !sel.hasStart {
				return sel, p.errf("expected an index")
			}
			return jpSelector{kind: selIndex, index: sel.start}, nil
		}
		sel.kind = selSlice
		p.pos++
		p.ws()
		if sel.end, sel.hasEnd, err = p.optInteger(); err != nil {
			return sel, err
		}
		p.ws()
		sel.step = 1
		if p.peek() == ':' {
			p.pos++
			p.ws()
			step, ok, err := p.optInteger()
			if err != nil {
				return sel, err
			}
			if ok {
				sel.step = step
			}
		}
		return sel, nil
	case c == 0:
		return jpSelector{}, p.errf("unexpected end; close the bracket with ]")
	default:
		return jpSelector{}, p.errf("unexpected %q in brackets; a selector is 'name', *, an index, a slice start:end:step or a filter ?expr", c)
	}
}

const maxSafeInt = 1<<53 - 1

func (p *jpParser) integer() (int64, error) {
	start := p.pos
	if !p.intPart() || p.src[start:p.pos] == "-0" {
		p.pos = start
		return 0, p.errf("invalid integer")
	}
	n, err := strconv.ParseInt(p.src[start:p.pos], 10, 64)
	if err != nil || n > maxSafeInt || n < -maxSafeInt {
		p.pos = start
		return 0, p.errf("integer out of range (at most 2^53-1)")
	}
	return n, nil
}

// optInteger reads an integer if one starts here; ok says whether one did.
func (p *jpParser) optInteger() (n int64, ok bool, err error) {
	if c := p.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, false, nil
	}
	n, err = p.integer()
	return n, err == nil, err
}

// intPart steps over an optional '-' and digits, and reports whether the
// digits are there without a leading zero.
func (p *jpParser) intPart() bool {
	if p.peek() == '-' {
		p.pos++
	}
	d := p.digits()
	return d != "" && (len(d) == 1 || d[0] != '0')
}

// digits steps over decimal digits and returns them.
func (p *jpParser) digits() string {
	start := p.pos
	for p.pos < len(p.src) && '0' <= p.src[p.pos] && p.src[p.pos] <= '9' {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *jpParser) stringLit() (string, error) {
	q := p.src[p.pos]
	start := p.pos
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			p.pos = start
			return "", p.errf("unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == q:
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errf("control character in string")
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return "", p.errf("unterminated escape")
			}
			e := p.src[p.pos+1]
			p.pos += 2
			switch e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case '/', '\\':
				b.WriteByte(e)
			case '\'', '"':
				if e != q {
					p.pos -= 2
					return "", p.errf("invalid escape \\%c", e)
				}
				b.WriteByte(e)
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if r >= 0xD800 && r <= 0xDBFF {
					if !strings.HasPrefix(p.src[p.pos:], `\u`) {
						return "", p.errf("lone surrogate")
					}
					p.pos += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					if r2 < 0xDC00 || r2 > 0xDFFF {
						return "", p.errf("invalid surrogate pair")
					}
					r = (r-0xD800)<<10 + (r2 - 0xDC00) + 0x10000
				} else if r >= 0xDC00 && r <= 0xDFFF {
					return "", p.errf("lone surrogate")
				}
				b.WriteRune(r)
			default:
				p.pos -= 2
				return "", p.errf("invalid escape \\%c", e)
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

func (p *jpParser) hex4() (rune, error) {
	if p.pos+4 > len(p.src) {
		return 0, p.errf("short \\u escape")
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+4], 16, 32)
	if err != nil {
		return 0, p.errf("invalid \\u escape")
	}
	p.pos += 4
	return rune(v), nil
}

// logical parses a logical-or expression.
func (p *jpParser) logical() (jpExpr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxJPDepth {
		return nil, p.errf("filter nested too deeply")
	}
	var or jpOr
	for {
		var and jpAnd
		for {
			p.ws()
			x, err := p.basic()
			if err != nil {
				return nil, err
			}
			and.xs = append(and.xs, x)
			p.ws()
			if !strings.HasPrefix(p.src[p.pos:], "&&") {
				break
			}
			p.pos += 2
		}
		if len(and.xs) == 1 {
			or.xs = append(or.xs, and.xs[0])
		} else {
			or.xs = append(or.xs, and)
		}
		if !strings.HasPrefix(p.src[p.pos:], "||") {
			break
		}
		p.pos += 2
	}
	if len(or.xs) == 1 {
		return or.xs[0], nil
	}
	return or, nil
}

func (p *jpParser) basic() (jpExpr, error) {
	if p.peek() == '!' {
		p.pos++
		p.ws()
		if p.peek() == '(' {
			x, err := p.paren()
			return jpNot{x}, err
		}
		x, err := p.testExpr()
		if err != nil {
			return nil, err
		}
		return jpNot{x}, nil
	}
	if p.peek() == '(' {
		return p.paren()
	}
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	p.ws()
	op := ""
	for _, o := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if strings.HasPrefix(p.src[p.pos:], o) {
			op = o
			break
		}
	}
	if op == "" {
		// A test expression: a query or a logical/nodes function.
		if left.lit != nil {
			return nil, p.errf("a literal alone is not a test; compare it with ==, !=, <, <=, > or >=")
		}
		if left.fn != nil {
			if t := funcType(left.fn.name); t == "value" {
				return nil, p.errf("%s() returns a value; compare it, e.g. %s(...) > 0", left.fn.name, left.fn.name)
			}
		}
		return jpTest{q: left.query, fn: left.fn}, nil
	}
	p.pos += len(op)
	p.ws()
	right, err := p.operand()
	if err != nil {
		return nil, err
	}
	for _, o := range []jpOperand{left, right} {
		if o.query != nil && !o.query.singular() {
			return nil, p.errf("a comparison needs a singular query (names and indices only)")
		}
		if o.fn != nil && funcType(o.fn.name) != "value" {
			return nil, p.errf("%s() cannot be compared; it is a test", o.fn.name)
		}
	}
	return jpCmp{op: op, l: left, r: right}, nil
}

func (p *jpParser) paren() (jpExpr, error) {
	p.pos++ // '('
	x, err := p.logical()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.peek() != ')' {
		return nil, p.errf("expected ')'")
	}
	p.pos++
	return x, nil
}

func (p *jpParser) testExpr() (jpExpr, error) {
	o, err := p.operand()
	if err != nil {
		return nil, err
	}
	if o.lit != nil {
		return nil, p.errf("! applies to a query, a function or a parenthesized expression")
	}
	if o.fn != nil && funcType(o.fn.name) == "value" {
		return nil, p.errf("%s() returns a value, not a test", o.fn.name)
	}
	return jpTest{q: o.query, fn: o.fn}, nil
}

func (q *Query) singular() bool {
	for _, s := range q.segs {
		if s.desc || len(s.sels) != 1 || (s.sels[0].kind != selName && s.sels[0].kind != selIndex) {
			return false
		}
	}
	return true
}

func funcType(name string) string {
	switch name {
	case "length", "count", "value":
		return "value"
	case "match", "search":
		return "logical"
	}
	return ""
}

func (p *jpParser) operand() (jpOperand, error) {
	switch c := p.peek(); {
	case c == '$' || c == '@':
		q, err := p.query()
		return jpOperand{query: q}, err
	case c == '\'' || c == '"':
		s, err := p.stringLit()
		return jpOperand{lit: &jv{kind: 's', s: s}}, err
	case c == '-' || '0' <= c && c <= '9':
		f, err := p.number()
		return jpOperand{lit: &jv{kind: 'f', f: f}}, err
	case strings.HasPrefix(p.src[p.pos:], "true") && !p.nameCharAt(p.pos+4):
		p.pos += 4
		return jpOperand{lit: &jv{kind: 'b', b: true}}, nil
	case strings.HasPrefix(p.src[p.pos:], "false") && !p.nameCharAt(p.pos+5):
		p.pos += 5
		return jpOperand{lit: &jv{kind: 'b'}}, nil
	case strings.HasPrefix(p.src[p.pos:], "null") && !p.nameCharAt(p.pos+4):
		p.pos += 4
		return jpOperand{lit: &jv{kind: 'n'}}, nil
	case 'a' <= c && c <= 'z':
		fn, err := p.function()
		return jpOperand{fn: fn}, err
	case c == 0:
		return jpOperand{}, p.errf("unexpected end of filter")
	}
	return jpOperand{}, p.errf("expected @, $, a literal or a function")
}

func (p *jpParser) nameCharAt(i int) bool {
	if i >= len(p.src) {
		return false
	}
	c := p.src[i]
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func (p *jpParser) number() (float64, error) {
	start := p.pos
	if !p.intPart() {
		p.pos = start
		return 0, p.errf("invalid number")
	}
	if p.peek() == '.' {
		p.pos++
		if p.digits() == "" {
			return 0, p.errf("invalid number")
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if p.digits() == "" {
			return 0, p.errf("invalid number")
		}
	}
	f, err := strconv.ParseFloat(p.src[start:p.pos], 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, p.errf("number out of range")
	}
	return f, nil
}

func (p *jpParser) function() (*jpFunc, error) {
	start := p.pos
	for p.pos < len(p.src) && ('a' <= p.src[p.pos] && p.src[p.pos] <= 'z' || '0' <= p.src[p.pos] && p.src[p.pos] <= '9' || p.src[p.pos] == '_') {
		p.pos++
	}
	name := p.src[start:p.pos]
	if p.peek() != '(' {
		p.pos = start
		return nil, p.errf("expected @, $, a literal or a function call")
	}
	want := map[string]int{"length": 1, "count": 1, "value": 1, "match": 2, "search": 2}[name]
	if want == 0 {
		p.pos = start
		return nil, p.errf("unknown function %s(); the functions are length, count, match, search and value", name)
	}
	p.pos++
	fn := &jpFunc{name: name}
	for {
		p.ws()
		if p.peek() == ')' && len(fn.args) == 0 {
			break
		}
		arg, err := p.funcArg()
		if err != nil {
			return nil, err
		}
		fn.args = append(fn.args, arg)
		p.ws()
		if p.peek() == ',' {
			p.pos++
			continue
		}
		break
	}
	if p.peek() != ')' {
		return nil, p.errf("expected ')' after the arguments of %s()", name)
	}
	p.pos++
	if len(fn.args) != want {
		return nil, p.errf("%s() takes %d argument(s), got %d", name, want, len(fn.args))
	}
	switch name {
	case "length", "match", "search":
		if a := fn.args[0]; a.query != nil && !a.query.singular() || a.expr != nil {
			return nil, p.errf("the first argument of %s() must be a value: a literal, a singular query or a value function", name)
		}
		if name != "length" {
			if a := fn.args[1]; a.query != nil && !a.query.singular() || a.expr != nil {
				return nil, p.errf("the pattern of %s() must be a value", name)
			}
			if a := fn.args[1]; a.lit != nil {
				if a.lit.kind != 's' {
					return nil, p.errf("the pattern of %s() must be a string", name)
				}
				re, err := iregexp(a.lit.s, name == "match")
				if err != nil {
					return nil, p.errf("invalid pattern for %s(): %v", name, err)
				}
				fn.re = re
			}
		}
	case "count", "value":
		if fn.args[0].query == nil {
			return nil, p.errf("%s() takes a query", name)
		}
	}
	return fn, nil
}

func (p *jpParser) funcArg() (jpArg, error) {
	c := p.peek()
	if c == '$' || c == '@' {
		// A query, possibly the start of a logical expression.
		save := p.pos
		q, err := p.query()
		if err != nil {
			return jpArg{}, err
		}
		p.ws()
		if c := p.peek(); c == ',' || c == ')' {
			return jpArg{query: q}, nil
		}
		p.pos = save
	}
	if c == '!' || c == '(' {
		x, err := p.logical()
		return jpArg{expr: x}, err
	}
	o, err := p.operand()
	if err != nil {
		return jpArg{}, err
	}
	p.ws()
	if c := p.peek(); c != ',' && c != ')' {
		return jpArg{}, p.errf("expected ',' or ')'")
	}
	return jpArg{lit: o.lit, query: o.query, fn: o.fn}, nil
}

// iregexp compiles an RFC 9485 I-Regexp: '.' matches any character but
// line breaks; match() must match the whole string.
func iregexp(pat string, whole bool) (*regexp.Regexp, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat):
			b.WriteByte(c)
			b.WriteByte(pat[i+1])
			i++
			continue
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r]`)
			continue
		}
		b.WriteByte(c)
	}
	src := b.String()
	if whole {
		src = `\A(?:` + src + `)\z`
	}
	return regexp.Compile(src)
}

// --- evaluation ---

type jpEval struct {
	d    []byte
	root Node
	err  error
	// limit on the number of nodes a query may produce
	budget int
}

const maxJPNodes = 5_000_000

var errTooManyNodes = &Error{ErrTooManyNodes, "the query selects more than 5,000,000 nodes; narrow it"}

func (ev *jpEval) run(q *Query, cur Node) []Node {
	start := ev.root
	if q.root == '@' {
		start = cur
	}
	nodes := []Node{start}
	for _, seg := range q.segs {
		var out []Node
		for _, n := range nodes {
			if seg.desc {
				out = ev.descend(n, seg.sels, out)
			} else {
				out = ev.apply(n, seg.sels, out)
			}
			if ev.err != nil {
				return nil
			}
		}
		nodes = out
		if len(nodes) == 0 {
			break
		}
	}
	return nodes
}

func (ev *jpEval) add(out []Node, n Node) []Node {
	ev.budget--
	if ev.budget < 0 && ev.err == nil {
		ev.err = errTooManyNodes
	}
	return append(out, n)
}

func (ev *jpEval) descend(n Node, sels []jpSelector, out []Node) []Node {
	out = ev.apply(n, sels, out)
	if ev.err != nil {
		return out
	}
	switch ev.d[n.Start] {
	case '{':
		ev.fail(jsonscan.EachMember(ev.d, n.Start, func(_ []byte, vs, ve int) bool {
			out = ev.descend(Node{vs, ve}, sels, out)
			return ev.err == nil
		}))
	case '[':
		ev.fail(jsonscan.EachElement(ev.d, n.Start, func(_, vs, ve int) bool {
			out = ev.descend(Node{vs, ve}, sels, out)
			return ev.err == nil
		}))
	}
	return out
}

func (ev *jpEval) fail(err error) {
	if err != nil && ev.err == nil {
		ev.err = err
	}
}

func (ev *jpEval) arrayLen(n Node) int {
	c := 0
	ev.fail(jsonscan.EachElement(ev.d, n.Start, func(int, int, int) bool { c++; return true }))
	return c
}

func (ev *jpEval) apply(n Node, sels []jpSelector, out []Node) []Node {
	kind := ev.d[n.Start]
	for _, sel := range sels {
		switch sel.kind {
		case selName:
			if kind == '{' {
				ev.fail(jsonscan.EachMember(ev.d, n.Start, func(k []byte, vs, ve int) bool {
					if jsonscan.KeyEquals(k, sel.name) {
						out = ev.add(out, Node{vs, ve})
						return false
					}
					return true
				}))
			}
		case selWild:
			switch kind {
			case '{':
				ev.fail(jsonscan.EachMember(ev.d, n.Start, func(_ []byte, vs, ve int) bool { out = ev.add(out, Node{vs, ve}); return ev.err == nil }))
			case '[':
				ev.fail(jsonscan.EachElement(ev.d, n.Start, func(_, vs, ve int) bool { out = ev.add(out, Node{vs, ve}); return ev.err == nil }))
			}
		case selIndex:
			if kind != '[' {
				continue
			}
			idx := sel.index
			if idx < 0 {
				idx += int64(ev.arrayLen(n))
				if idx < 0 {
					continue
				}
			}
			ev.fail(jsonscan.EachElement(ev.d, n.Start, func(i, vs, ve int) bool {
				if int64(i) == idx {
					out = ev.add(out, Node{vs, ve})
					return false
				}
				return true
			}))
		case selSlice:
			if kind != '[' || sel.step == 0 {
				continue
			}
			length := int64(ev.arrayLen(n))
			lo, hi := sliceBounds(sel, length)
			if sel.step > 0 {
				ev.fail(jsonscan.EachElement(ev.d, n.Start, func(i, vs, ve int) bool {
					j := int64(i)
					if j >= hi {
						return false
					}
					if j >= lo && (j-lo)%sel.step == 0 {
						out = ev.add(out, Node{vs, ve})
					}
					return ev.err == nil
				}))
			} else {
				var all []Node
				ev.fail(jsonscan.EachElement(ev.d, n.Start, func(_, vs, ve int) bool { all = append(all, Node{vs, ve}); return true }))
				for j := hi; j > lo; j += sel.step {
					if j >= 0 && j < int64(len(all)) {
						out = ev.add(out, all[j])
					}
				}
			}
		case selFilter:
			visit := func(vs, ve int) bool {
				if ev.truth(sel.filter, Node{vs, ve}) {
					out = ev.add(out, Node{vs, ve})
				}
				return ev.err == nil
			}
			switch kind {
			case '{':
				ev.fail(jsonscan.EachMember(ev.d, n.Start, func(_ []byte, vs, ve int) bool { return visit(vs, ve) }))
			case '[':
				ev.fail(jsonscan.EachElement(ev.d, n.Start, func(_, vs, ve int) bool { return visit(vs, ve) }))
			}
		}
	}
	return out
}

// sliceBounds follows RFC 9535 section 2.3.4.2.2.
func sliceBounds(sel jpSelector, length int64) (lo, hi int64) {
	norm := func(i int64) int64 {
		if i >= 0 {
			return i
		}
		return length + i
	}
	if sel.step > 0 {
		start, end := int64(0), length
		if sel.hasStart {
			start = norm(sel.start)
		}
		if sel.hasEnd {
			end = norm(sel.end)
		}
		return min(max(start, 0), length), min(max(end, 0), length)
	}
	start, end := length-1, -length-1
	if sel.hasStart {
		start = norm(sel.start)
	}
	if sel.hasEnd {
		end = norm(sel.end)
	}
	// For a negative step, iteration goes from hi (start) down to lo (end), exclusive.
	return min(max(end, -1), length-1), min(max(start, -1), length-1)
}

func (ev *jpEval) truth(x jpExpr, cur Node) bool {
	if ev.err != nil {
		return false
	}
	switch x := x.(type) {
	case jpOr:
		for _, y := range x.xs {
			if ev.truth(y, cur) {
				return true
			}
		}
		return false
	case jpAnd:
		for _, y := range x.xs {
			if !ev.truth(y, cur) {
				return false
			}
		}
		return true
	case jpNot:
		return !ev.truth(x.x, cur)
	case jpTest:
		if x.q != nil {
			return len(ev.run(x.q, cur)) > 0
		}
		return ev.logicalFn(x.fn, cur)
	case jpCmp:
		return compare(ev, x.op, ev.value(x.l, cur), ev.value(x.r, cur))
	}
	return false
}

func (ev *jpEval) nodeValue(n Node) jv {
	d := ev.d
	switch c := d[n.Start]; {
	case c == '"':
		s, _ := jsonscan.Unquote(d[n.Start:n.End])
		return jv{kind: 's', s: s}
	case c == 't':
		return jv{kind: 'b', b: true}
	case c == 'f':
		return jv{kind: 'b'}
	case c == 'n':
		return jv{kind: 'n'}
	case c == '{' || c == '[':
		return jv{kind: 'o', node: n}
	}
	f, _ := strconv.ParseFloat(string(d[n.Start:n.End]), 64)
	return jv{kind: 'f', f: f}
}

func (ev *jpEval) value(o jpOperand, cur Node) jv {
	switch {
	case o.lit != nil:
		return *o.lit
	case o.query != nil:
		ns := ev.run(o.query, cur)
		if len(ns) != 1 {
			return jv{}
		}
		return ev.nodeValue(ns[0])
	case o.fn != nil:
		return ev.valueFn(o.fn, cur)
	}
	return jv{}
}

func (ev *jpEval) argValue(a jpArg, cur Node) jv {
	return ev.value(jpOperand{lit: a.lit, query: a.query, fn: a.fn}, cur)
}

func (ev *jpEval) valueFn(fn *jpFunc, cur Node) jv {
	switch fn.name {
	case "length":
		v := ev.argValue(fn.args[0], cur)
		switch v.kind {
		case 's':
			return jv{kind: 'f', f: float64(utf8.RuneCountInString(v.s))}
		case 'o':
			n := 0
			if ev.d[v.node.Start] == '{' {
				ev.fail(jsonscan.EachMember(ev.d, v.node.Start, func([]byte, int, int) bool { n++; return true }))
			} else {
				n = ev.arrayLen(v.node)
			}
			return jv{kind: 'f', f: float64(n)}
		}
		return jv{}
	case "count":
		return jv{kind: 'f', f: float64(len(ev.run(fn.args[0].query, cur)))}
	case "value":
		ns := ev.run(fn.args[0].query, cur)
		if len(ns) != 1 {
			return jv{}
		}
		return ev.nodeValue(ns[0])
	}
	return jv{}
}

func (ev *jpEval) logicalFn(fn *jpFunc, cur Node) bool {
	v := ev.argValue(fn.args[0], cur)
	if v.kind != 's' {
		return false
	}
	re := fn.re
	if re == nil {
		p := ev.argValue(fn.args[1], cur)
		if p.kind != 's' {
			return false
		}
		var err error
		if re, err = iregexp(p.s, fn.name == "match"); err != nil {
			return false
		}
	}
	return re.MatchString(v.s)
}

func compare(ev *jpEval, op string, a, b jv) bool {
	switch op {
	case "==":
		return equal(ev, a, b)
	case "!=":
		return !equal(ev, a, b)
	case "<":
		return less(a, b)
	case ">":
		return less(b, a)
	case "<=":
		return less(a, b) || equal(ev, a, b)
	case ">=":
		return less(b, a) || equal(ev, a, b)
	}
	return false
}

func equal(ev *jpEval, a, b jv) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case 0, 'n':
		return true
	case 'b':
		return a.b == b.b
	case 'f':
		return a.f == b.f
	case 's':
		return a.s == b.s
	case 'o':
		x, err1 := decodeValue(ev.d, a.node.Start, a.node.End)
		y, err2 := decodeValue(ev.d, b.node.Start, b.node.End)
		return err1 == nil && err2 == nil && reflect.DeepEqual(x, y)
	}
	return false
}

func less(a, b jv) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case 'f':
		return a.f < b.f
	case 's':
		return a.s < b.s
	}
	return false
}

// Select runs the query over the JSON document d and returns the nodes it
// selects, in the order of RFC 9535. A d that is not JSON gives a
// *jsonscan.Error; a query that selects too much an *Error with the cause
// ErrTooManyNodes.
func (q *Query) Select(d []byte) ([]Node, error) {
	rs := jsonscan.SkipSpace(d, 0)
	re, err := jsonscan.SkipValue(d, rs, 0)
	if err != nil {
		return nil, err
	}
	if e := jsonscan.SkipSpace(d, re); e != len(d) {
		return nil, &jsonscan.Error{Off: e, Msg: "text after the JSON value"}
	}
	ev := &jpEval{d: d, root: Node{rs, re}, budget: maxJPNodes}
	nodes := ev.run(q, ev.root)
	if ev.err != nil {
		return nil, ev.err
	}
	return nodes, nil
}

// decodeValue decodes the value in d[s:e] with encoding/json (numbers as
// float64).
func decodeValue(d []byte, s, e int) (any, error) {
	var v any
	if err := json.Unmarshal(d[s:e], &v); err != nil {
		return nil, err
	}
	return v, nil
}
