package session

import (
	"fmt"

	"github.com/pi-session/pi-session/jsonscan"

	"github.com/pi-session/pi-session/jsonpos"
)

// span is a value's position in a line; start < 0 means the key is absent.
type span struct{ start, end int }

var absent = span{-1, -1}

func (s span) ok() bool { return s.start >= 0 }

// lineKind classifies a line the way pi's loader treats it.
type lineKind int

const (
	lineBlank   lineKind = iota // only whitespace: skipped silently
	lineInvalid                 // not JSON: pi skips it
	lineFalsy                   // JSON null, false, 0 or "": pi skips it
	lineValue                   // other JSON that is not an object: pi keeps it, but it is no entry
	lineObject                  // a JSON object
)

// fields are the spans of the top-level members the reader looks at. The
// last occurrence of a duplicated key wins, as in JSON.parse.
type fields struct {
	typ, id, parentID, timestamp span
	message, role, msgContent    span // role and content are inside message
	version                      span // header
	summary, firstKeptEntryID    span // compaction, branch_summary
	firstKeptEntryIndex          span // version 1 compaction
	targetID, replacement        span // context_edit, label
	replacementContent           span // inside replacement
	content, fromID, systemMsg   span // custom_message, branch_summary, compaction
	// depth is how deep the line nests (its object counts as one) and
	// deepField the member where it is deepest ("message.content").
	depth     int
	deepField string
}

// scanLine validates one line (without its newline) and picks out its fields.
func scanLine(b []byte) (lineKind, fields, error) {
	f := fields{
		typ: absent, id: absent, parentID: absent, timestamp: absent,
		message: absent, role: absent, msgContent: absent, version: absent,
		summary: absent, firstKeptEntryID: absent, firstKeptEntryIndex: absent,
		targetID: absent, replacement: absent, replacementContent: absent,
		content: absent, fromID: absent, systemMsg: absent,
	}
	i := skipSpace(b, 0)
	if i == len(b) {
		return lineBlank, f, nil
	}
	if b[i] != '{' {
		end, err := skipValue(b, i)
		if err == nil && skipSpace(b, end) != len(b) {
			err = errAt(skipSpace(b, end), "unexpected %q after JSON value", b[skipSpace(b, end)])
		}
		if err != nil {
			return lineInvalid, f, err
		}
		switch v := string(b[i:end]); v {
		case "null", "false", `""`:
			return lineFalsy, f, nil
		default:
			if isZeroNumber(b[i:end]) {
				return lineFalsy, f, nil
			}
		}
		return lineValue, f, nil
	}
	// deep notes the line's nesting depth at a member (the line's object
	// counts as one), and the member's name when it is too deep: naming it
	// costs an allocation the common case does without.
	deep := func(parent string, key []byte, depth int) {
		if depth <= f.depth {
			return
		}
		f.depth = depth
		if depth > MaxDepth {
			name, _ := jsonscan.Unquote(key)
			if parent != "" {
				name = parent + "." + name
			}
			f.deepField = name
		}
	}
	end, err := forEachMember(b, i, func(key []byte, start int) (int, error) {
		var s *span
		name := string(key[1 : len(key)-1])
		if hasEscape(key) {
			name, _ = jsonscan.Unquote(key)
		}
		switch name {
		case "type":
			s = &f.typ
		case "id":
			s = &f.id
		case "parentId":
			s = &f.parentID
		case "timestamp":
			s = &f.timestamp
		case "version":
			s = &f.version
		case "summary":
			s = &f.summary
		case "firstKeptEntryId":
			s = &f.firstKeptEntryID
		case "firstKeptEntryIndex":
			s = &f.firstKeptEntryIndex
		case "targetId":
			s = &f.targetID
		case "content":
			s = &f.content
		case "fromId":
			s = &f.fromID
		case "systemMessage":
			s = &f.systemMsg
		case "message", "replacement":
			if b[start] != '{' {
				if name == "message" {
					s = &f.message
				} else {
					s = &f.replacement
				}
				break
			}
			// Inside message: role and content; inside replacement: content.
			var role, content *span
			if name == "message" {
				f.role, f.msgContent = absent, absent
				role, content = &f.role, &f.msgContent
			} else {
				f.replacementContent = absent
				content = &f.replacementContent
			}
			end, err := forEachMember(b, start, func(key []byte, start int) (int, error) {
				end, d, err := skipValueDepth(b, start)
				if err != nil {
					return end, err
				}
				deep(name, key, 2+d)
				switch {
				case role != nil && jsonscan.KeyEquals(key, "role"):
					*role = span{start, end}
				case jsonscan.KeyEquals(key, "content"):
					*content = span{start, end}
				}
				return end, nil
			})
			if err != nil {
				return end, err
			}
			if name == "message" {
				f.message = span{start, end}
			} else {
				f.replacement = span{start, end}
			}
			return end, nil
		}
		end, d, err := skipValueDepth(b, start)
		if err != nil {
			return end, err
		}
		deep("", key, 1+d)
		if s != nil {
			*s = span{start, end}
		}
		return end, nil
	})
	if err != nil {
		return lineInvalid, f, err
	}
	if j := skipSpace(b, end); j != len(b) {
		return lineInvalid, f, errAt(j, "unexpected %q after JSON object", b[j])
	}
	return lineObject, f, nil
}

func isZeroNumber(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	for _, c := range b {
		if c == 'e' || c == 'E' {
			break
		}
		if c != '0' && c != '.' {
			return false
		}
	}
	return len(b) > 0 && b[0] == '0'
}

// str decodes a string-valued span.
func (s span) str(b []byte) string {
	if !s.ok() || b[s.start] != '"' {
		return ""
	}
	v, _ := jsonscan.Unquote(b[s.start:s.end])
	return v
}

func (s span) isString(b []byte) bool { return s.ok() && b[s.start] == '"' }
func (s span) isNull(b []byte) bool   { return s.ok() && b[s.start] == 'n' }
func (s span) isObject(b []byte) bool { return s.ok() && b[s.start] == '{' }
func (s span) isArray(b []byte) bool  { return s.ok() && b[s.start] == '[' }
func (s span) isNumber(b []byte) bool {
	return s.ok() && (b[s.start] == '-' || '0' <= b[s.start] && b[s.start] <= '9')
}

// fieldError names a member whose value has the wrong type.
func fieldError(b []byte, name string, s span, want string) error {
	if !s.ok() {
		return fmt.Errorf("missing %q, want %s", name, want)
	}
	return fmt.Errorf("%q is %s, want %s", name, jsonpos.Kind(b[s.start:]), want)
}

// checkEntry checks the members pi relies on when it builds the tree and the
// model context. Members pi only displays are left to Entry.Decode.
// legacy is true for version 1 files, whose entries have no ids yet. It
// returns the member at fault with the error.
func checkEntry(b []byte, f *fields, typ string, legacy bool) (field string, err error) {
	if !legacy {
		if !f.id.isString(b) || f.id.end-f.id.start == 2 {
			if f.id.isString(b) {
				return "id", fmt.Errorf(`"id" is empty`)
			}
			return "id", fieldError(b, "id", f.id, "a string")
		}
		if f.parentID.ok() && !f.parentID.isString(b) && !f.parentID.isNull(b) {
			return "parentId", fieldError(b, "parentId", f.parentID, "a string or null")
		}
	}
	if f.timestamp.ok() && !f.timestamp.isString(b) {
		return "timestamp", fieldError(b, "timestamp", f.timestamp, "a string")
	}
	switch typ {
	case "message":
		if !f.message.isObject(b) {
			return "message", fieldError(b, "message", f.message, "an object")
		}
		if !f.role.isString(b) {
			return "message.role", fieldError(b, "message.role", f.role, "a string")
		}
	case "compaction":
		if !f.summary.isString(b) {
			return "summary", fieldError(b, "summary", f.summary, "a string")
		}
		if legacy {
			if f.firstKeptEntryIndex.ok() && !f.firstKeptEntryIndex.isNumber(b) {
				return "firstKeptEntryIndex", fieldError(b, "firstKeptEntryIndex", f.firstKeptEntryIndex, "a number")
			}
		} else if !f.firstKeptEntryID.isString(b) {
			return "firstKeptEntryId", fieldError(b, "firstKeptEntryId", f.firstKeptEntryID, "a string")
		}
		if f.systemMsg.ok() && !f.systemMsg.isObject(b) && !f.systemMsg.isNull(b) {
			return "systemMessage", fieldError(b, "systemMessage", f.systemMsg, "an object")
		}
	case "context_edit":
		if !f.targetID.isString(b) {
			return "targetId", fieldError(b, "targetId", f.targetID, "a string")
		}
		if !f.replacement.isNull(b) {
			if !f.replacement.isObject(b) {
				return "replacement", fieldError(b, "replacement", f.replacement, "null or an object")
			}
			if c := f.replacementContent; !c.isString(b) && !c.isArray(b) {
				return "replacement.content", fieldError(b, "replacement.content", c, "a string or an array")
			}
		}
	case "branch_summary":
		if f.summary.ok() && !f.summary.isString(b) && !f.summary.isNull(b) {
			return "summary", fieldError(b, "summary", f.summary, "a string")
		}
	case "custom_message":
		if c := f.content; c.ok() && !c.isNull(b) && !c.isString(b) && !c.isArray(b) {
			return "content", fieldError(b, "content", c, "a string or an array")
		}
	case "label":
		if !f.targetID.isString(b) {
			return "targetId", fieldError(b, "targetId", f.targetID, "a string")
		}
	}
	return "", nil
}
