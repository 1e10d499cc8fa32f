package offload

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/pi-session/pi-session/clip"
)

// Part is one named part of headed output: a section, a file of grep
// output or of a diff, or a markdown heading.
type Part struct {
	Name  string
	Level int   // markdown heading level; 1 otherwise
	Start int64 // the heading line (for grep: the file's first line)
	Body  int64 // after the heading line (for grep: Start)
	End   int64
	Lines int // for grep: matching lines of the file
}

// Outline is the structure of a payload's text.
type Outline struct {
	// Kind: "grep" (path:line:text grouped by file), "sections" (Fabric
	// style "--- name ---", "=== name ===" or "==> name <==" markers),
	// "diff" (diff --git per file), "markdown" (headings) or "" (none).
	Kind      string
	Parts     []Part
	Truncated bool // more parts than maxParts
}

const maxParts = 100_000

// grepPath returns the path of a "path:line:text" (or "path:line-text")
// line, as a slice of the line (one outline of 100 MB of grep output sees
// a million lines: a string for each would be garbage). Line numbers start
// at 1, so "10:00:00" (a time of day in a log line) is not one; a path of
// digits alone is a number, and one that starts like a date
// (2026-11-30T10) is a log line's timestamp.
func grepPath(line []byte) ([]byte, bool) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 || i > 300 || line[0] == ' ' || line[0] == '\t' {
		return nil, false
	}
	if i+1 < len(line) && line[i+1] == '0' || isDigits(line[:i]) || i >= 5 && isDigits(line[:4]) && line[4] == '-' {
		return nil, false
	}
	j := i + 1
	for j < len(line) && '0' <= line[j] && line[j] <= '9' {
		j++
	}
	if j == i+1 || j >= len(line) || line[j] != ':' && line[j] != '-' {
		return nil, false
	}
	path := line[:i]
	if bytes.IndexByte(path, ' ') >= 0 && bytes.IndexByte(path, '/') < 0 {
		return nil, false
	}
	return path, true
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// looksLikeGrep samples the first lines of data.
func looksLikeGrep(data []byte) bool {
	limit := min(len(data), 64<<10)
	sample := data[:limit]
	n, hits := 0, 0
	for len(sample) > 0 && n < 200 {
		i := bytes.IndexByte(sample, '\n')
		var line []byte
		if i < 0 {
			if limit == len(data) {
				line = sample
			}
			sample = nil
		} else {
			line, sample = sample[:i], sample[i+1:]
		}
		if len(line) == 0 || string(line) == "--" {
			continue
		}
		n++
		if _, ok := grepPath(line); ok {
			hits++
		}
	}
	return n >= 3 && hits*10 >= n*8
}

// markerName returns the name of a section marker line.
func markerName(line []byte) (string, bool) {
	line = bytes.TrimRight(line, " \r")
	if len(line) < 7 || len(line) > 200 {
		return "", false
	}
	if bytes.HasPrefix(line, []byte("==> ")) && bytes.HasSuffix(line, []byte(" <==")) {
		return strings.TrimSpace(string(line[4 : len(line)-4])), true
	}
	for _, c := range []byte{'-', '='} {
		if line[0] != c || line[len(line)-1] != c {
			continue
		}
		i := 0
		for i < len(line) && line[i] == c {
			i++
		}
		j := len(line)
		for j > i && line[j-1] == c {
			j--
		}
		if i < 3 || len(line)-j < 3 || j <= i {
			return "", false
		}
		name := strings.TrimSpace(string(line[i:j]))
		if name == "" || len(name) > 120 {
			return "", false
		}
		return name, true
	}
	return "", false
}

func headingLevel(line []byte) (int, string, bool) {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return 0, "", false
	}
	name := strings.TrimSpace(strings.TrimRight(string(line[n+1:]), "\r#"))
	if name == "" || len(name) > 160 {
		return 0, "", false
	}
	return n, name, true
}

func diffName(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("diff --git "))
	if !ok {
		return "", false
	}
	rest = bytes.TrimRight(rest, "\r")
	if i := bytes.LastIndex(rest, []byte(" b/")); i >= 0 {
		return string(rest[i+3:]), true
	}
	return string(rest), true
}

// buildOutline finds the structure of data in one pass over its lines.
func buildOutline(data []byte) Outline {
	if looksLikeGrep(data) {
		return grepOutline(data)
	}
	var markers, diffs, heads []Part
	inFence := false
	pos := 0
	for pos < len(data) {
		end := lineEnd(data, pos)
		line := data[pos:end]
		if len(line) > 0 {
			switch line[0] {
			case '-', '=':
				if name, ok := markerName(line); ok && len(markers) < maxParts {
					markers = append(markers, Part{Name: name, Level: 1, Start: int64(pos), Body: int64(min(end+1, len(data)))})
				}
			case '#':
				if !inFence {
					if lvl, name, ok := headingLevel(line); ok && len(heads) < maxParts {
						heads = append(heads, Part{Name: name, Level: lvl, Start: int64(pos), Body: int64(min(end+1, len(data)))})
					}
				}
			case 'd':
				if name, ok := diffName(line); ok && len(diffs) < maxParts {
					diffs = append(diffs, Part{Name: name, Level: 1, Start: int64(pos), Body: int64(min(end+1, len(data)))})
				}
			case '`', '~':
				if bytes.HasPrefix(line, []byte("```")) || bytes.HasPrefix(line, []byte("~~~")) {
					inFence = !inFence
				}
			}
		}
		pos = end + 1
	}
	size := int64(len(data))
	switch {
	case len(markers) >= 2:
		return Outline{Kind: "sections", Parts: flatEnds(markers, size), Truncated: len(markers) >= maxParts}
	case len(diffs) >= 2:
		return Outline{Kind: "diff", Parts: flatEnds(diffs, size), Truncated: len(diffs) >= maxParts}
	case len(heads) >= 2:
		for i := range heads {
			heads[i].End = size
			for j := i + 1; j < len(heads); j++ {
				if heads[j].Level <= heads[i].Level {
					heads[i].End = heads[j].Start
					break
				}
			}
		}
		return Outline{Kind: "markdown", Parts: heads, Truncated: len(heads) >= maxParts}
	}
	return Outline{}
}

func flatEnds(ps []Part, size int64) []Part {
	for i := range ps {
		if i+1 < len(ps) {
			ps[i].End = ps[i+1].Start
		} else {
			ps[i].End = size
		}
	}
	return ps
}

func grepOutline(data []byte) Outline {
	var o Outline
	o.Kind = "grep"
	pos := 0
	var cur *Part
	for pos < len(data) {
		end := lineEnd(data, pos)
		line := data[pos:end]
		if p, ok := grepPath(line); ok {
			if cur == nil || cur.Name != string(p) {
				if len(o.Parts) >= maxParts {
					o.Truncated = true
					break
				}
				if cur != nil {
					cur.End = int64(pos)
				}
				o.Parts = append(o.Parts, Part{Name: string(p), Level: 1, Start: int64(pos), Body: int64(pos)})
				cur = &o.Parts[len(o.Parts)-1]
			}
			if len(line) > len(p)+1 && bytes.IndexByte(line[len(p)+1:], ':') >= 0 {
				cur.Lines++
			}
		}
		pos = end + 1
	}
	if cur != nil {
		cur.End = int64(len(data))
	}
	return o
}

// findSection picks the part named name: an exact name, else the only
// case-insensitive match, else the only part whose name contains it.
func findSection(o Outline, name string) (Part, error) {
	if o.Kind == "" {
		return Part{}, argErr("section", "this payload has no named sections (no \"--- name ---\" markers, markdown headings, diff files or grep files); use query or a byte range (offset, length)")
	}
	var exact, fold, sub []Part
	want := strings.TrimSpace(name)
	for _, p := range o.Parts {
		switch {
		case p.Name == want:
			exact = append(exact, p)
		case strings.EqualFold(p.Name, want):
			fold = append(fold, p)
		case strings.Contains(strings.ToLower(p.Name), strings.ToLower(want)):
			sub = append(sub, p)
		}
	}
	for _, set := range [][]Part{exact, fold, sub} {
		if len(set) == 1 {
			return set[0], nil
		}
		if len(set) > 1 {
			var b strings.Builder
			for i, p := range set {
				if i == 8 {
					fmt.Fprintf(&b, ", ... %d more", len(set)-8)
					break
				}
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%q at byte %d", cutText(p.Name, 60), p.Start)
			}
			return Part{}, argErr("section", "%q is ambiguous: %s; read one with offset and length, or use query", clip.Echo(name), b.String())
		}
	}
	var b strings.Builder
	for i, p := range o.Parts {
		if i == 12 {
			fmt.Fprintf(&b, ", ... %d more", len(o.Parts)-12)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(fmt.Sprintf("%q", cutText(p.Name, 60)))
	}
	return Part{}, argErr("section", "no section named %q; the sections are %s", clip.Echo(name), b.String())
}
