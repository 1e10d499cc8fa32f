package session

import "encoding/json"

// Member returns the raw JSON value of the top-level member key of the
// object raw (the last one, if the key repeats), or nil when raw is no
// object or has no such member. It scans without decoding, so engines can
// look at one member of a large message (a tool result's toolName) cheaply.
func Member(raw []byte, key string) json.RawMessage {
	s := memberSpan(raw, key)
	if !s.ok() {
		return nil
	}
	return json.RawMessage(raw[s.start:s.end:s.end])
}

// MemberString returns the string value of the top-level member key of the
// object raw, and false when it is absent or not a string.
func MemberString(raw []byte, key string) (string, bool) {
	s := memberSpan(raw, key)
	if !s.isString(raw) {
		return "", false
	}
	return s.str(raw), true
}
