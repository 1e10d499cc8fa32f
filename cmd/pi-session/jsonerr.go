package main

import (
	"fmt"

	"github.com/pi-session/pi-session/jsonpos"
)

// notObjectError is "name:line:column: what is wrong; want ..." when data
// is not exactly one JSON object, nil when it is: every JSON file or
// stream the command line reads is placed this way (name "stdin" for
// standard input).
func notObjectError(name string, data []byte, want string) error {
	p, what, ok := jsonpos.NotObject(data)
	if ok {
		return nil
	}
	return fmt.Errorf("%s; want %s", jsonpos.Message(name, p, "", what), want)
}

// fieldMessage places a problem with the member at path (dots and [i],
// as jsonpos.Find reads it) of the JSON object data: at the member's
// value, or at the object a missing member belongs in.
func fieldMessage(name string, data []byte, path, problem string) string {
	off, _ := jsonpos.Find(data, path)
	return jsonpos.Message(name, jsonpos.At(data, off), path, problem)
}
