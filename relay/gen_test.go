package relay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"
)

// genSession writes a valid pi 1.6 session of about size bytes to w: turns
// of a user prompt, a tool call (bash, read or edit) with its result (most
// a few KB, some 64 KB, a few 1 MB), and an answer; words from a made-up
// vocabulary of a few thousand, identifiers in camelCase and snake_case,
// paths and numbers, so the index sees text shaped like a coding session.
// Early on, a tool result holds the line "quokka_habitat migration failed
// at shard 17"; near the end, a relay's compaction keeps only the last
// exchange, so nearly everything has left the context.
func genSession(w io.Writer, size int64, seed uint64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	r := rand.New(rand.NewPCG(seed, 7))
	g := &gen{w: bw, r: r, t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	g.vocab()
	g.line(map[string]any{"type": "session", "version": 3, "id": "01a2b3c4-bbbb-7000-8000-00000000b000", "timestamp": g.ts(), "cwd": "/home/dev/project"})
	g.entry("model_change", map[string]any{"provider": "anthropic", "modelId": "claude-x"})
	g.entry("message", map[string]any{"message": map[string]any{"role": "system", "content": "You are pi.", "timestamp": g.ms()}})
	for turn := 0; g.n < size-200_000; turn++ {
		g.user(g.sentence(20 + r.IntN(40)))
		name := []string{"bash", "read", "edit"}[r.IntN(3)]
		path := g.path()
		args := map[string]any{"path": path}
		if name == "bash" {
			args = map[string]any{"command": "grep -rn " + g.word() + " " + path}
		}
		if name == "edit" {
			args["edits"] = []any{map[string]any{"oldText": g.sentence(5), "newText": g.sentence(6)}}
		}
		call := fmt.Sprintf("toolu_%06d", turn)
		g.entry("message", map[string]any{"message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": g.sentence(10)},
			map[string]any{"type": "toolCall", "id": call, "name": name, "arguments": args},
		}, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-x", "stopReason": "toolUse", "timestamp": g.ms(),
			"usage": map[string]any{"input": 10, "output": 100, "cacheRead": 1000, "cacheWrite": 10, "totalTokens": 1120}}})
		n := 1000 + r.IntN(7000)
		switch {
		case r.IntN(400) == 0:
			n = 1 << 20
		case r.IntN(20) == 0:
			n = 64 << 10
		}
		out := g.output(n)
		if turn == 3 {
			out = "quokka_habitat migration failed at shard 17\n" + out
		}
		g.entry("message", map[string]any{"message": map[string]any{"role": "toolResult", "toolCallId": call, "toolName": name,
			"content": []any{map[string]any{"type": "text", "text": out}}, "isError": false, "timestamp": g.ms()}})
		g.entry("message", map[string]any{"message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": g.sentence(50 + r.IntN(150))},
		}, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-x", "stopReason": "stop", "timestamp": g.ms(),
			"usage": map[string]any{"input": 10, "output": 200, "cacheRead": 2000, "cacheWrite": 10, "totalTokens": 2220}}})
	}
	g.user("Never push to main without asking. What is left?")
	kept := g.last
	g.entry("message", map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Little."}},
		"stopReason": "stop", "timestamp": g.ms(), "usage": map[string]any{"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12}}})
	g.entry("compaction", map[string]any{"summary": "# Handoff note 1 (context-relay)\n", "firstKeptEntryId": kept, "tokensBefore": 150000,
		"details": map[string]any{"relay": true, "version": 1, "notePath": "/agent/context-relay/x/1.md"}, "fromHook": true})
	g.user("And now?")
	g.entry("message", map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Now this."}},
		"stopReason": "stop", "timestamp": g.ms(), "usage": map[string]any{"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12}}})
	if g.err != nil {
		return g.err
	}
	return bw.Flush()
}

type gen struct {
	w     *bufio.Writer
	r     *rand.Rand
	t     time.Time
	n     int64
	id    int
	last  string
	words []string
	err   error
}

func (g *gen) vocab() {
	syl := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "qu", "ar", "en", "il", "om", "ux", "bre", "cla", "dri", "fro", "gli", "pla", "sto", "tra", "xen"}
	seen := map[string]bool{}
	for len(g.words) < 4000 {
		var b strings.Builder
		for k := 2 + g.r.IntN(3); k > 0; k-- {
			b.WriteString(syl[g.r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			g.words = append(g.words, w)
		}
	}
}

// word picks a word, the common ones more often (Zipf-like).
func (g *gen) word() string {
	i := int(float64(len(g.words)) * g.r.Float64() * g.r.Float64() * g.r.Float64())
	return g.words[i]
}

func (g *gen) sentence(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch g.r.IntN(12) {
		case 0:
			b.WriteString(g.word() + strings.ToUpper(g.word()[:1]) + g.word()[1:]) // camelCase
		case 1:
			b.WriteString(g.word() + "_" + g.word())
		case 2:
			b.WriteString(g.path())
		default:
			b.WriteString(g.word())
		}
	}
	b.WriteByte('.')
	return b.String()
}

func (g *gen) path() string {
	return "src/" + g.word() + "/" + g.word() + []string{".go", ".ts", ".md", "_test.go"}[g.r.IntN(4)]
}

// output is n bytes of tool output: log or code lines.
func (g *gen) output(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		if g.r.IntN(2) == 0 {
			fmt.Fprintf(&b, "%s:%d: %s %s(%s) %d\n", g.path(), i, g.word(), g.word()+strings.ToUpper(g.word()[:1]), g.word(), g.r.IntN(100000))
		} else {
			fmt.Fprintf(&b, "2026-11-01T09:%02d:%02d INFO %s %s %s_%s ok\n", i/60%60, i%60, g.word(), g.word(), g.word(), g.word())
		}
	}
	return b.String()[:n]
}

func (g *gen) ts() string {
	g.t = g.t.Add(1500 * time.Millisecond)
	return g.t.Format("2006-01-02T15:04:05.000Z")
}
func (g *gen) ms() int64 { return g.t.UnixMilli() }
func (g *gen) user(text string) {
	g.entry("message", map[string]any{"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": g.ms()}})
}

func (g *gen) entry(typ string, members map[string]any) {
	g.id++
	id := fmt.Sprintf("%08x", g.id)
	m := map[string]any{"type": typ, "id": id, "timestamp": g.ts()}
	if g.last == "" {
		m["parentId"] = nil
	} else {
		m["parentId"] = g.last
	}
	for k, v := range members {
		m[k] = v
	}
	g.line(m)
	g.last = id
}

func (g *gen) line(m map[string]any) {
	b, err := json.Marshal(m)
	if err != nil && g.err == nil {
		g.err = err
	}
	g.w.Write(b)
	g.w.WriteByte('\n')
	g.n += int64(len(b) + 1)
}

// genFile writes a generated session of about size bytes to path.
func genFile(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := genSession(f, size, 1); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
