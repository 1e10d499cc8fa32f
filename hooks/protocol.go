package hooks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/pi-session/pi-session/clip"
)

// Protocol is the version of the wire protocol below. The extension sends
// its own in hello; a host speaking another refuses the connection.
const Protocol = 1

// The wire protocol. Every message is one line of UTF-8 JSON ended by "\n"
// holding a JSON-RPC 2.0 object, optionally followed by raw bytes:
//
//	request       {"jsonrpc":"2.0","id":7,"method":"session.describe","params":{...},"timeoutMs":2000}
//	notification  {"jsonrpc":"2.0","method":"bye"}
//	response      {"jsonrpc":"2.0","id":7,"result":{...}}
//	error         {"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"...","data":{...}}}
//
// Three members extend JSON-RPC 2.0:
//
//	timeoutMs  on a request: the caller's deadline, relative, in milliseconds.
//	deadline   on a request: the same deadline as a time, in Unix
//	           milliseconds. A request read after it is answered
//	           CodeDeadline and never run: its caller has gone on without
//	           it (a host that was stopped reads what queued up meanwhile).
//	bulk       on any message: exactly that many raw bytes follow the line.
//
// The bulk path exists because JSON costs too much for large payloads.
// BenchmarkBulk (bench_test.go) moves 16 MiB of tool-output-like text from
// the extension's TypeScript client into an engine several ways and copies
// it raw over a unix socket in the same run. On a 2-core VM: inside a JSON
// string about 24 MB/s; as bulk bytes after a JSON line 0.9-2.1 GB/s,
// 0.62-0.92x the raw copy; through a private 0600 file 0.8-1.0 GB/s when
// the engine reads it, 1.0-1.6 GB/s when it renames the file into place
// unread. Bulk bytes were chosen: faster than a file the engine reads,
// close to the rename, and unlike files they need no directory on the
// store's filesystem, leave nothing behind when a process dies, and carry
// answers as well as requests.
//
// The first request on a connection must be hello (see Hello). Requests on
// one connection may be in flight concurrently; responses come in any
// order, matched by id. A line longer than the host's MaxMessage, or bulk
// over MaxBulk, is consumed and answered with CodeTooLarge naming the limit.

// Error codes: JSON-RPC 2.0's own, then pi-session's in the range it
// reserves for implementations.
const (
	CodeParse          = -32700 // the line is not JSON
	CodeInvalidRequest = -32600 // not a JSON-RPC 2.0 request
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603 // an engine panicked
	CodeEngine         = -32000 // an engine returned an error
	CodeDeadline       = -32001 // the request's deadline passed
	CodeTooLarge       = -32002 // a message over the size limit
	CodeHelloFirst     = -32003 // a call before hello
	CodeVersion        = -32004 // hello with another protocol version
	CodeRefused        = -32005 // the caller may not do this
	CodeCancelled      = -32800 // the caller cancelled the request (rpc.cancel)
)

// Error is a JSON-RPC error. Handlers may return one to choose the code;
// any other error is sent as CodeEngine with the error's text.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the given code.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// message is one JSON-RPC message as it travels. ID, Params and Result are
// kept raw; ID is echoed back as the client wrote it.
type message struct {
	JSONRPC   string          `json:"jsonrpc"`
	ID        json.RawMessage `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *Error          `json:"error,omitempty"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	Deadline  int64           `json:"deadline,omitempty"`
	Bulk      int64           `json:"bulk,omitempty"`
}

// isRequest reports whether m asks for something (a request or a notification).
func (m *message) isRequest() bool { return m.Method != "" }

// isNotification reports whether m is a request that wants no answer.
func (m *message) isNotification() bool { return m.isRequest() && m.ID == nil }

// wireMessage holds the members of a line before they are checked.
type wireMessage struct {
	JSONRPC   json.RawMessage `json:"jsonrpc"`
	ID        json.RawMessage `json:"id"`
	Method    json.RawMessage `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`
	TimeoutMs json.RawMessage `json:"timeoutMs"`
	Deadline  json.RawMessage `json:"deadline"`
	Bulk      json.RawMessage `json:"bulk"`
}

// parseMessage decodes one line. The bulk count is decoded first and
// returned even when the rest is invalid, so the reader can stay in step
// with the stream; it is -1 when the line does not say (not JSON at all).
// The returned *Error carries the id when one could be read.
func parseMessage(line []byte) (m message, bulk int64, perr *Error, id json.RawMessage) {
	var w wireMessage
	if err := json.Unmarshal(line, &w); err != nil {
		return m, -1, Errorf(CodeParse, "hooks: parse error: %v", err), nil
	}
	if w.Bulk != nil && !isNull(w.Bulk) {
		n, err := strconv.ParseInt(string(w.Bulk), 10, 64)
		if err != nil || n < 0 {
			return m, -1, Errorf(CodeInvalidRequest, "hooks: bulk must be a whole number of bytes >= 0, got %s", clip.Echo(string(w.Bulk))), validID(w.ID)
		}
		bulk = n
	}
	m.Bulk = bulk
	if id := validID(w.ID); w.ID != nil && id == nil {
		return m, bulk, Errorf(CodeInvalidRequest, "hooks: id must be a string, a number or null, got %s", clip.Echo(string(w.ID))), nil
	}
	m.ID = w.ID
	if string(w.JSONRPC) != `"2.0"` {
		return m, bulk, Errorf(CodeInvalidRequest, `hooks: jsonrpc must be "2.0"`), m.ID
	}
	m.JSONRPC = "2.0"
	if w.Method != nil {
		if err := json.Unmarshal(w.Method, &m.Method); err != nil || m.Method == "" {
			return m, bulk, Errorf(CodeInvalidRequest, "hooks: method must be a non-empty string"), m.ID
		}
	}
	if w.Params != nil && !isNull(w.Params) {
		if c := firstByte(w.Params); c != '{' && c != '[' {
			return m, bulk, Errorf(CodeInvalidRequest, "hooks: params must be an object or an array"), m.ID
		}
		m.Params = w.Params
	}
	if w.TimeoutMs != nil && !isNull(w.TimeoutMs) {
		n, err := strconv.ParseInt(string(w.TimeoutMs), 10, 64)
		if err != nil || n < 0 {
			return m, bulk, Errorf(CodeInvalidRequest, "hooks: timeoutMs must be a whole number >= 0"), m.ID
		}
		m.TimeoutMs = n
	}
	if w.Deadline != nil && !isNull(w.Deadline) {
		n, err := strconv.ParseInt(string(w.Deadline), 10, 64)
		if err != nil || n < 0 {
			return m, bulk, Errorf(CodeInvalidRequest, "hooks: deadline must be a whole number of Unix milliseconds >= 0"), m.ID
		}
		m.Deadline = n
	}
	m.Result = w.Result
	if w.Error != nil && !isNull(w.Error) {
		m.Error = new(Error)
		if err := json.Unmarshal(w.Error, m.Error); err != nil {
			return m, bulk, Errorf(CodeInvalidRequest, "hooks: error must be an object with a code and a message"), m.ID
		}
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return m, bulk, Errorf(CodeInvalidRequest, "hooks: a message needs a method, a result or an error"), m.ID
	}
	return m, bulk, nil, m.ID
}

// validID returns raw if it is a valid JSON-RPC id (string, number, null).
func validID(raw json.RawMessage) json.RawMessage {
	switch c := firstByte(raw); {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return raw
	case c == 'n' && isNull(raw):
		return raw
	}
	return nil
}

func firstByte(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// frame is one message read from the stream with its bulk bytes. When err
// is set the message could not be used; id is the request's id if known.
type frame struct {
	msg  message
	bulk []byte
	err  *Error
	id   json.RawMessage
}

// headSize is how much of an oversized line is kept to find its id.
const headSize = 4096

// frameReader reads frames from a stream, refusing oversized ones without
// losing its place.
type frameReader struct {
	br      *bufio.Reader
	maxLine int
	maxBulk int64
	line    []byte
}

func newFrameReader(r io.Reader, maxLine int, maxBulk int64) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine, maxBulk: maxBulk}
}

// errFraming means the stream cannot be followed any further (a bulk
// count that cannot be read); the connection must end.
var errFraming = errors.New("hooks: lost the message boundaries")

// next reads one frame. Errors from the stream (io.EOF at a message
// boundary, io.ErrUnexpectedEOF inside one) end the connection; problems
// with one message come back in frame.err.
func (fr *frameReader) next() (frame, error) {
	line, size, err := fr.readLine()
	for err == nil && len(bytes.TrimSpace(line)) == 0 && size <= int64(fr.maxLine) {
		line, size, err = fr.readLine() // blank lines separate nothing
	}
	if err != nil {
		return frame{}, err
	}
	if size > int64(fr.maxLine) {
		id := idFromHead(line)
		return frame{id: id, err: &Error{Code: CodeTooLarge,
			Message: fmt.Sprintf("hooks: message of %d bytes exceeds the limit of %d bytes (maxMessage); send large payloads as bulk bytes", size, fr.maxLine),
			Data:    map[string]any{"limit": "maxMessage", "max": fr.maxLine, "size": size}}}, nil
	}
	m, bulk, perr, id := parseMessage(line)
	if bulk < 0 {
		if perr != nil && perr.Code == CodeInvalidRequest {
			return frame{id: id, err: perr}, errFraming
		}
		bulk = 0 // not JSON: assume no bulk follows
	}
	f := frame{msg: m, err: perr, id: id}
	if bulk > fr.maxBulk {
		if _, err := io.CopyN(io.Discard, fr.br, bulk); err != nil {
			return frame{}, unexpected(err)
		}
		if f.err == nil {
			f.err = &Error{Code: CodeTooLarge,
				Message: fmt.Sprintf("hooks: bulk of %d bytes exceeds the limit of %d bytes (maxBulk)", bulk, fr.maxBulk),
				Data:    map[string]any{"limit": "maxBulk", "max": fr.maxBulk, "size": bulk}}
		}
		return f, nil
	}
	if bulk > 0 {
		f.bulk = make([]byte, bulk)
		if _, err := io.ReadFull(fr.br, f.bulk); err != nil {
			return frame{}, unexpected(err)
		}
	}
	return f, nil
}

// readLine returns the next line without its "\n" and its full size. A
// line over maxLine is consumed whole; only its first maxLine+1 bytes are
// returned.
func (fr *frameReader) readLine() ([]byte, int64, error) {
	fr.line = fr.line[:0]
	var size int64
	for {
		chunk, err := fr.br.ReadSlice('\n')
		size += int64(len(chunk))
		if keep := fr.maxLine + 1 - len(fr.line); keep > 0 {
			fr.line = append(fr.line, chunk[:min(keep, len(chunk))]...)
		}
		switch {
		case err == nil:
			if n := len(fr.line); n > 0 && fr.line[n-1] == '\n' {
				fr.line = fr.line[:n-1]
			}
			return fr.line, size - 1, nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && size == 0:
			return nil, 0, io.EOF
		default:
			return nil, 0, unexpected(err)
		}
	}
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// idFromHead finds the id of a message from the start of its line: the
// value of a top-level "id" member that comes before the line was cut.
// Clients that want errors for oversized messages write the id first.
func idFromHead(head []byte) json.RawMessage {
	if len(head) > headSize {
		head = head[:headSize]
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, ok := t.(string)
		if !ok {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key == "id" && dec.InputOffset() < int64(len(head)) { // a value at the very end may be cut short
			return validID(v)
		}
	}
	return nil
}

// encode appends m as one line.
func encode(buf []byte, m *message) ([]byte, error) {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return buf, fmt.Errorf("hooks: encode: %w", err)
	}
	buf = append(buf, b...)
	return append(buf, '\n'), nil
}

// writeFrame writes m and its bulk bytes with one writev.
func writeFrame(w io.Writer, m *message, bulk []byte) error {
	m.Bulk = int64(len(bulk))
	line, err := encode(nil, m)
	if err != nil {
		return err
	}
	if len(bulk) == 0 {
		_, err = w.Write(line)
		return err
	}
	bufs := net.Buffers{line, bulk}
	_, err = bufs.WriteTo(w)
	return err
}
