package offload

import (
	"fmt"
	"strings"
)

// noticeInput is everything an offload notice shows.
type noticeInput struct {
	tool      string
	handle    string
	stored    int64 // bytes stored
	lines     int64
	repeat    bool // the same payload was offloaded earlier in this session
	pv        preview
	kept      []int  // positions of non-text blocks that stay in place
	warning   string // shown first, e.g. an unrecovered Fabric artifact
	note      string // shown first, e.g. a recovered artifact
	pageBytes int    // the page budget of a boundary read
	strategy  string // "offload" or "turn-budget"
}

// nLines says "1 line" or "n lines".
func nLines[T int | int64](n T) string {
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func readCall(handle, args string) string {
	if args == "" {
		return fmt.Sprintf(`ctx_read({"id":%q})`, handle)
	}
	return fmt.Sprintf(`ctx_read({"id":%q,%s})`, handle, args)
}

// rangeArgs is the suggested range read from the end of the preview.
func rangeArgs(stopAt, size int64, page int) string {
	if stopAt >= size {
		stopAt = 0
	}
	length := min(int64(page), size-stopAt)
	return fmt.Sprintf(`"offset":%d,"length":%d`, stopAt, length)
}

// renderNotice writes the text that replaces an offloaded result.
func renderNotice(in noticeInput) string {
	var b strings.Builder
	if in.warning != "" {
		fmt.Fprintf(&b, "[warning: %s]\n", in.warning)
	}
	if in.note != "" {
		fmt.Fprintf(&b, "[note: %s]\n", in.note)
	}
	what := "result"
	if in.tool != "" {
		what = in.tool + " result"
	}
	if in.repeat {
		fmt.Fprintf(&b, "[%s of %d bytes (%s, %s) is identical to %s, offloaded earlier in this session; its preview is not repeated]\n",
			what, in.stored, humanBytes(in.stored), nLines(in.lines), in.handle)
	} else {
		why := "kept out of context"
		if in.strategy == "turn-budget" {
			why = "kept out of context: this turn's text budget is spent"
		}
		fmt.Fprintf(&b, "[%s of %d bytes (%s, %s) stored as %s, %s]\n",
			what, in.stored, humanBytes(in.stored), nLines(in.lines), in.handle, why)
	}
	if len(in.kept) > 0 {
		fmt.Fprintf(&b, "[non-text blocks at positions %s stay in place]\n", intList(in.kept))
	}
	b.WriteString("Read exactly the part you need with ctx_read:\n")
	if in.pv.shape == "textBlocks" {
		fmt.Fprintf(&b, "  %s\n", readCall(in.handle, in.pv.specific))
		if in.pv.extra != "" {
			fmt.Fprintf(&b, "  %s\n", readCall(in.handle, in.pv.extra))
		}
	} else {
		fmt.Fprintf(&b, "  %s\n", readCall(in.handle, rangeArgs(in.pv.stopAt, in.stored, in.pageBytes)))
		if in.pv.specific != "" {
			fmt.Fprintf(&b, "  %s\n", readCall(in.handle, in.pv.specific))
		}
	}
	if !in.repeat && in.pv.text != "" {
		b.WriteString(in.pv.text)
	}
	return strings.TrimRight(b.String(), "\n")
}

func intList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// renderErrorNotice writes a compacted error: the useful lines, then the
// handle of the full output.
func renderErrorNotice(tool, handle string, text []byte, budget int) string {
	lines := totalLines(text)
	var head strings.Builder
	fmt.Fprintf(&head, "[%s error output of %d bytes (%s) compacted to its most useful lines; the full output is %s]\n",
		orDefault(tool, "tool"), len(text), nLines(lines), handle)
	call := func(word string) string {
		return "[full output: " + readCall(handle, fmt.Sprintf(`"query":%q,"ignoreCase":true`, word)) + " or " + readCall(handle, `"offset":0`) + "]"
	}
	room := budget - head.Len() - len(call("segmentation")) - 1
	picked := usefulLines(text, max(room, 64))
	tailCall := call(diagnosticWord(text, picked))
	var b strings.Builder
	b.WriteString(head.String())
	renderUseful(&b, text, picked, lines)
	b.WriteString(tailCall)
	return b.String()
}

// renderEditNotice keeps an edit's acknowledgement and puts the diff behind
// a handle.
func renderEditNotice(ack string, handle string, diff []byte, diffAt int) string {
	added, removed, files := diffStats(diff)
	var b strings.Builder
	if ack = strings.TrimSpace(ack); ack != "" {
		b.WriteString(ack)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[diff of %d bytes (+%d/-%d lines, %d files) stored as %s: %s]",
		len(diff), added, removed, files, handle, readCall(handle, fmt.Sprintf(`"offset":%d`, diffAt)))
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
