package session

import (
	"strconv"

	"github.com/pi-session/pi-session/jsonscan"
)

// Small helpers to build and edit JSON objects as bytes, keeping the member
// order of the input the way JavaScript object spreads do.

// object builds a JSON object member by member.
type object struct{ b []byte }

func (o *object) raw(key string, value []byte) *object {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = jsonscan.AppendString(o.b, key)
	o.b = append(o.b, ':')
	o.b = append(o.b, value...)
	return o
}

func (o *object) str(key, value string) *object { return o.raw(key, jsonscan.AppendString(nil, value)) }

func (o *object) int(key string, v int64) *object {
	return o.raw(key, strconv.AppendInt(nil, v, 10))
}

func (o *object) bytes() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

// memberSpan finds the value of the last top-level member named key in the
// object raw. It returns absent if there is none.
func memberSpan(raw []byte, key string) span {
	s := absent
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return s
	}
	_, _ = forEachMember(raw, i, func(k []byte, start int) (int, error) {
		if jsonscan.KeyEquals(k, key) {
			end, err := skipValue(raw, start)
			if err != nil {
				return end, err
			}
			s = span{start, end}
			return end, nil
		}
		return 0, nil
	})
	return s
}

// withMember returns a copy of the object raw with key set to value: the
// member keeps its place if present (every occurrence is replaced), and is
// appended otherwise, as `{...obj, key: value}` does in JavaScript.
func withMember(raw []byte, key string, value []byte) []byte {
	var spans []span
	i := skipSpace(raw, 0)
	end, err := forEachMember(raw, i, func(k []byte, start int) (int, error) {
		if jsonscan.KeyEquals(k, key) {
			end, err := skipValue(raw, start)
			if err != nil {
				return end, err
			}
			spans = append(spans, span{start, end})
			return end, nil
		}
		return 0, nil
	})
	if err != nil {
		return raw
	}
	out := make([]byte, 0, len(raw)+len(value)+len(key)+4)
	if len(spans) == 0 {
		body := raw[i : end-1]
		out = append(out, body...)
		if len(skipSpaceBytes(body[1:])) > 0 {
			out = append(out, ',')
		}
		out = jsonscan.AppendString(out, key)
		out = append(out, ':')
		out = append(out, value...)
		return append(out, '}')
	}
	prev := i
	for _, s := range spans {
		out = append(out, raw[prev:s.start]...)
		out = append(out, value...)
		prev = s.end
	}
	return append(out, raw[prev:end]...)
}

// withoutMember returns a copy of the object raw without the members named key.
func withoutMember(raw []byte, key string) []byte {
	i := skipSpace(raw, 0)
	out := []byte{'{'}
	first := true
	end, err := forEachMember(raw, i, func(k []byte, start int) (int, error) {
		end, err := skipValue(raw, start)
		if err != nil {
			return end, err
		}
		if !jsonscan.KeyEquals(k, key) {
			if !first {
				out = append(out, ',')
			}
			first = false
			out = append(out, k...)
			out = append(out, ':')
			out = append(out, raw[start:end]...)
		}
		return end, nil
	})
	if err != nil || end == 0 {
		return raw
	}
	return append(out, '}')
}

func skipSpaceBytes(b []byte) []byte { return b[skipSpace(b, 0):] }
