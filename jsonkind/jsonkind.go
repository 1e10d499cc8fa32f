// Package jsonkind names the type of a JSON value for error messages ("got an array").
package jsonkind

import (
	"bytes"

	"github.com/pi-session/pi-session/clip"
)

// Of names the type of the JSON value v: "a string", "an object", "an
// array", "a boolean", "null", "the number 42", or
// "nothing" for no value. Only the value's first byte is trusted; a
// number is echoed through clip.Echo.
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
	return "the number " + clip.Echo(string(v))
}
