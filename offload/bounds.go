package offload

import (
	"fmt"
	"unicode/utf8"
)

// Hard caps of every answer the engine gives. The readers and renderers
// already stay within their budgets, and every argument they echo is cut
// with clip.Echo; these caps hold whatever the arguments, so that no answer
// can grow with its input.
const (
	// maxErrorBytes caps a tool error's text.
	maxErrorBytes = 4 << 10
	// maxCommandBytes caps the text of a /ce command.
	maxCommandBytes = 32 << 10
	// programSlack is what a program read may add to its page: a header
	// is not written there, only the page.
	programSlack = 8 << 10
)

// answerCap is the most a ctx_read, ctx_summarize or ctx_offload answer
// holds: under the offload threshold at the model boundary (so reading a
// handle never makes another one), the program page plus slack inside a
// program.
func answerCap(threshold int64, inProgram bool) int {
	if inProgram {
		return programReadBytes + programSlack
	}
	return int(max(min(threshold-1, programReadBytes), 1024))
}

// capText cuts s to at most max bytes, on a rune boundary, and says so.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	note := fmt.Sprintf("\n[answer cut at %d of %d bytes]", max, len(s))
	keep := max - len(note)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note
}

// boundedError is an error whose text was cut by capError; errors.Is and
// errors.As still see the original.
type boundedError struct {
	msg string
	err error
}

func (e *boundedError) Error() string { return e.msg }
func (e *boundedError) Unwrap() error { return e.err }

// capError caps an error's text at maxErrorBytes.
func capError(err error) error {
	if err == nil || len(err.Error()) <= maxErrorBytes {
		return err
	}
	return &boundedError{msg: capText(err.Error(), maxErrorBytes), err: err}
}
