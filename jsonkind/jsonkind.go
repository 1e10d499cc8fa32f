// Package jsonkind names the type of a JSON value for error messages ("got an array").
package jsonkind

import "bytes"

// Of names the type of the JSON value v: "a string", "an object", "an
// array", "a boolean", "null", "the number 42", or
// "nothing" for no value. Only the value's first byte is trusted; a
// number is shown cut to 40 bytes.
func Of(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if len(v) > 40 {
		return "the number " + string(v[:40]) + "..."
	}
	return "the number " + string(v)
}
