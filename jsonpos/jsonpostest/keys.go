// Package jsonpostest lists every key of a JSON text with its place, by a scanner of its own, so that fuzz tests can check the config readers' reports of unknown and repeated keys against something jsonpos did not compute.
package jsonpostest

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Key is one member key of some object in the text.
type Key struct {
	Parent   []string // the keys above it, outermost first (array levels add nothing)
	InArray  bool     // an array lies between it and the top object
	Key      string
	Line     int // 1-based, of the key's opening quote
	Object   int // which object holds it: the same number for members of one object
	Repeated bool
}

// Path is Parent and Key joined with dots, as the readers name keys.
func (k Key) Path() string { return strings.Join(append(append([]string{}, k.Parent...), k.Key), ".") }

// Keys returns the keys of data, a valid JSON object (after a byte order
// mark, which it skips), in file order; ok is false for anything else.
func Keys(data []byte) (keys []Key, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !json.Valid(data) {
		return nil, false
	}
	s := &scanner{data: data, line: 1}
	s.space()
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return nil, false
	}
	s.value(nil, false)
	return s.keys, true
}

type scanner struct {
	data    []byte
	i, line int
	objects int
	keys    []Key
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '\n':
			s.line++
		case ' ', '\t', '\r':
		default:
			return
		}
		s.i++
	}
}

// value reads the value at s.i (valid JSON), recording the keys of the
// objects in it.
func (s *scanner) value(parent []string, inArray bool) {
	s.space()
	switch s.data[s.i] {
	case '{':
		s.objects++
		id := s.objects
		seen := map[string]bool{}
		s.i++
		for {
			s.space()
			if s.data[s.i] == '}' {
				s.i++
				return
			}
			if s.data[s.i] == ',' {
				s.i++
				s.space()
			}
			line := s.line
			key := s.str()
			s.keys = append(s.keys, Key{Parent: parent, InArray: inArray, Key: key, Line: line, Object: id, Repeated: seen[key]})
			seen[key] = true
			s.space()
			s.i++ // ':'
			s.value(append(append([]string{}, parent...), key), inArray)
			s.space()
			if s.data[s.i] == ',' {
				s.i++
			}
		}
	case '[':
		s.i++
		for {
			s.space()
			if s.data[s.i] == ']' {
				s.i++
				return
			}
			s.value(parent, true)
			s.space()
			if s.data[s.i] == ',' {
				s.i++
			}
		}
	case '"':
		s.str()
	default: // number, true, false, null
		for s.i < len(s.data) && !strings.ContainsRune(" \t\r\n,]}", rune(s.data[s.i])) {
			s.i++
		}
	}
}

// str reads a string at s.i and returns it decoded.
func (s *scanner) str() string {
	start := s.i
	s.i++
	for s.data[s.i] != '"' {
		if s.data[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
	var out string
	if err := json.Unmarshal(s.data[start:s.i], &out); err != nil {
		panic("jsonpostest: " + err.Error())
	}
	return out
}

// Above is k's parents each after a NUL ("" at the top), a map key
// that tells {"": {"a": 1}} from {"a": 1}.
func Above(k Key) string {
	var b strings.Builder
	for _, p := range k.Parent {
		b.WriteString("\x00" + p)
	}
	return b.String()
}

// Expected sorts the keys a reader must report: unknown is each key that
// lies where the reader's schema speaks (checked; never inside an array,
// where a schema of objects does not reach) and is not known there,
// repeated each key an earlier member of its object had.
func Expected(keys []Key, known func(k Key) (checked, ok bool)) (unknown, repeated []Key) {
	for _, k := range keys {
		if checked, ok := known(k); checked && !ok && !k.InArray {
			unknown = append(unknown, k)
		}
		if k.Repeated {
			repeated = append(repeated, k)
		}
	}
	return unknown, repeated
}

// Missing returns the keys for which no warning contains what want says
// it must (the file's name and line, the key, the kind of report), and
// how many warnings match is; a reader must report each key once.
func Missing(warnings []string, keys []Key, want func(Key) []string) []Key {
	var out []Key
	for _, k := range keys {
		found := false
		for _, w := range warnings {
			all := true
			for _, part := range want(k) {
				if !strings.Contains(w, part) {
					all = false
					break
				}
			}
			if all {
				found = true
				break
			}
		}
		if !found {
			out = append(out, k)
		}
	}
	return out
}

// Count is how many warnings match re (whole warnings: anchor it, so that
// a value echoed in some other warning cannot pass for a report).
func Count(warnings []string, re *regexp.Regexp) int {
	n := 0
	for _, w := range warnings {
		if re.MatchString(w) {
			n++
		}
	}
	return n
}
