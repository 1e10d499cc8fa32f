package relay

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rankSession writes a session of the given entries, all of which leave
// the context (a compaction keeps only a last exchange), and returns its
// path and the id of each entry by name. An entry is "user: text",
// "assistant: text", "tool NAME: text" (a tool result without a call) or
// "call NAME ARGS-JSON => result text" (an assistant's tool call and its
// result).
func rankSession(t *testing.T, entries map[string]string, order []string) (string, map[string]string) {
	t.Helper()
	b := newBuilder(t)
	ids := map[string]string{}
	for _, name := range order {
		spec := entries[name]
		switch {
		case strings.HasPrefix(spec, "user: "):
			ids[name] = b.user(strings.TrimPrefix(spec, "user: "))
		case strings.HasPrefix(spec, "assistant: "):
			ids[name] = b.assistant(strings.TrimPrefix(spec, "assistant: "))
		case strings.HasPrefix(spec, "tool "):
			tool, text, _ := strings.Cut(strings.TrimPrefix(spec, "tool "), ": ")
			ids[name] = b.tool(tool, text)
		case strings.HasPrefix(spec, "call "):
			call, result, _ := strings.Cut(strings.TrimPrefix(spec, "call "), " => ")
			tool, args, _ := strings.Cut(call, " ")
			var a map[string]any
			if err := jsonUnmarshal(args, &a); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cid := "call_" + name
			b.add("-", "message", map[string]any{"message": map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "toolCall", "id": cid, "name": tool, "arguments": a},
			}, "stopReason": "toolUse", "timestamp": 1}})
			callID := b.last
			resID := b.add("-", "message", map[string]any{"message": map[string]any{"role": "toolResult", "toolCallId": cid, "toolName": tool, "content": []any{map[string]any{"type": "text", "text": result}}, "isError": false, "timestamp": 1}})
			ids[name] = callID + " + " + resID
		default:
			t.Fatalf("%s: unknown entry %q", name, spec)
		}
	}
	kept := b.user("the last exchange")
	b.assistant("ok")
	b.add("-", "compaction", map[string]any{"summary": "note", "firstKeptEntryId": kept, "tokensBefore": 100})
	path, _, _ := b.open()
	return path, ids
}

var hitLine = regexp.MustCompile(`(?m)^\[\d+\] entryId (\S+(?: \+ \S+)?) ·`)

// ranking is the names of the entries a search answers, best first.
func ranking(answer string, ids map[string]string) []string {
	byID := map[string]string{}
	for name, id := range ids {
		byID[id] = name
	}
	var out []string
	for _, m := range hitLine.FindAllStringSubmatch(answer, -1) {
		name, ok := byID[m[1]]
		if !ok {
			name = "?" + m[1]
		}
		out = append(out, name)
	}
	return out
}

// TestRecallRanking: tables of entries and queries with the order their
// answers must come in (the first entries of it; others may follow).
func TestRecallRanking(t *testing.T) {
	tests := []struct {
		name    string
		entries map[string]string
		order   []string
		query   string
		want    []string
	}{{
		name: "exact word above stem and prefix",
		entries: map[string]string{
			"exact":  "tool bash: the migration failed at shard 3",
			"stem":   "tool bash: failing migrations are retried; failures are logged; the migrations failing today",
			"prefix": "tool bash: failedover failedover failedover migration",
		},
		order: []string{"exact", "stem", "prefix"},
		query: "failed migration",
		want:  []string{"exact"},
	}, {
		name: "more of the words above fewer",
		entries: map[string]string{
			"two": "tool bash: network branches: 3",
			"one": "tool bash: network network network network",
		},
		order: []string{"two", "one"},
		query: "how many branches network",
		want:  []string{"two", "one"},
	}, {
		name: "a rare term (a number) above a common one",
		entries: map[string]string{
			"e1":   "tool bash: error: retry later",
			"e2":   "tool bash: error: disk full error",
			"e3":   "tool bash: error error error",
			"rare": "tool bash: exit status 137 after the error",
			"e4":   "tool bash: error again",
		},
		order: []string{"e1", "e2", "rare", "e3", "e4"},
		query: "error 137",
		want:  []string{"rare"},
	}, {
		name: "an identifier above its parts apart",
		entries: map[string]string{
			"parts": "tool bash: the rotor spins; 417 is the count; rotor again, and rotor",
			"ident": "tool bash: tuned rotor_417 to 3 kHz",
		},
		order: []string{"ident", "parts"},
		query: "rotor_417",
		want:  []string{"ident", "parts"},
	}, {
		name: "a tool call and its result as one unit: the command and a word of its output",
		entries: map[string]string{
			"unit":   `call bash {"command":"git branch -a | grep -c network"} => 3`,
			"other":  `call bash {"command":"git log --oneline -3"} => d7ebc31 network retry fix`,
			"prose":  "assistant: I will count the branches next.",
			"prose2": "user: which git branches are about the network?",
		},
		order: []string{"unit", "other", "prose", "prose2"},
		query: "git branch grep network 3",
		want:  []string{"unit"},
	}, {
		name: "the output line with the number above the script that computes it",
		entries: map[string]string{
			"script": `call write {"path":"count.py","content":"import subprocess\nbranches = subprocess.check_output(['git', 'branch', '-a']).decode().split()\nnetwork = [b for b in branches if 'network' in b]\nprint('network branches:', len(network))\n"} => Successfully wrote to count.py`,
			"output": `call bash {"command":"python3 count.py"} => network branches: 4`,
		},
		order: []string{"script", "output"},
		query: "network branches 4",
		want:  []string{"output", "script"},
	}, {
		name: "the words adjacent and in order above the words apart",
		entries: map[string]string{
			"apart":    "tool bash: build ok; tests ran; 3 failed after the linker stage was done",
			"adjacent": "tool bash: the build failed at the linker stage",
			"reversed": "tool bash: failed: the build of the linker stage",
		},
		order: []string{"apart", "reversed", "adjacent"},
		query: "build failed linker",
		want:  []string{"adjacent"},
	}, {
		name: "a fragment inside a word finds its entry, after exact matches",
		entries: map[string]string{
			"fragment": "tool bash: rm: cannot delete the stalelockfile",
			"exact":    "tool bash: cannot remove directory: not empty",
			"none":     "tool bash: nothing to see",
		},
		order: []string{"fragment", "exact", "none"},
		query: "lockfile remove",
		want:  []string{"exact", "fragment"},
	}, {
		name: "a fragment alone",
		entries: map[string]string{
			"fragment": "tool bash: cannot remove the stalelockfile",
			"none":     "tool bash: nothing to see",
		},
		order: []string{"fragment", "none"},
		query: "ockfil",
		want:  []string{"fragment"},
	}, {
		name: "Japanese by bigrams, function words left out",
		entries: map[string]string{
			"dup":   "tool bash: 2026-11-30 ERROR 打刻が重複しています 社員番号=ABC123",
			"other": "tool bash: 2026-11-30 WARN 休憩の打刻がありません",
			"noise": "assistant: ログを確認しました。",
		},
		order: []string{"dup", "other", "noise"},
		query: "重複打刻はどこ",
		want:  []string{"dup", "other"},
	}, {
		name: "Chinese",
		entries: map[string]string{
			"low":   "tool bash: 警告 库存不足 仓库=仓库B 商品=香蕉 剩余=3",
			"other": "tool bash: 错误 连接超时 仓库=仓库C",
		},
		order: []string{"low", "other"},
		query: "库存不足的警告有多少条",
		want:  []string{"low"},
	}, {
		name: "Korean, particles cut",
		entries: map[string]string{
			"fail":  "tool bash: 오류 결제 실패 주문번호=A-1042 사유=카드_한도_초과",
			"other": "tool bash: 정보 결제 승인 주문번호=A-1040",
		},
		order: []string{"other", "fail"},
		query: "결제실패는 몇 건이에요",
		want:  []string{"fail"},
	}, {
		name: "a query mixing scripts",
		entries: map[string]string{
			"mixed": "tool bash: --- PASS: TestNormalizeID (0.00s) 全角の社員番号を変換",
			"en":    "tool bash: --- PASS: TestFormat (0.00s)",
		},
		order: []string{"en", "mixed"},
		query: "NormalizeID 全角",
		want:  []string{"mixed"},
	}, {
		name: "full-width text by an ASCII query",
		entries: map[string]string{
			"wide":  "tool read: 社員番号は「ＡＢＣ１２３」のように英字３文字と数字３桁です",
			"other": "tool read: 社員番号の一覧",
		},
		order: []string{"other", "wide"},
		query: "ABC123",
		want:  []string{"wide"},
	}, {
		name: "ASCII text by a full-width query, half-width katakana by full-width",
		entries: map[string]string{
			"ascii": "tool bash: employee KTO007 clocked out twice",
			"kana":  "tool read: ## ｼｽﾃﾑ設定",
		},
		order: []string{"ascii", "kana"},
		query: "ＫＴＯ００７ システム",
		want:  []string{"ascii", "kana"},
	}, {
		name: "German and Russian inflections, diacritics folded",
		entries: map[string]string{
			"de":    "tool bash: 12 Straßenbahn 18 Unannehmlichkeiten",
			"ru":    "tool bash: Всего запросов: 3000, ошибок 5xx: 385",
			"noise": "tool bash: nothing",
		},
		order: []string{"noise", "de", "ru"},
		query: "strassenbahn запрос ошибки",
		want:  []string{"de", "ru"},
	}, {
		name: "control characters in the query are dropped",
		entries: map[string]string{
			"hit":   "tool bash: ember cache miss rate 42%",
			"other": "tool bash: nothing",
		},
		order: []string{"hit", "other"},
		query: "ember\x00 \x1b[31mcache\x1b[0m\tmiss\u200b",
		want:  []string{"hit"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, ids := rankSession(t, tt.entries, tt.order)
			e := New(Options{AgentDir: t.TempDir()})
			got := recallText(t, e, path, map[string]any{"query": tt.query, "limit": 10})
			r := ranking(got, ids)
			if len(r) < len(tt.want) {
				t.Fatalf("recall(%q) ranks %v, want %v first:\n%s", tt.query, r, tt.want, got)
			}
			if d := cmp.Diff(tt.want, r[:len(tt.want)]); d != "" {
				t.Errorf("recall(%q) ranks %v (-want +got of the first):\n%s\n%s", tt.query, r, d, got)
			}
		})
	}
}

// TestRecallMatchedWords: the answer says which words matched, which no
// entry holds and which were left out as common words; it is empty only
// when no word matches anything.
func TestRecallMatchedWords(t *testing.T) {
	path, _ := rankSession(t, map[string]string{"a": "tool bash: network branches: 3", "b": "user: how many are there?"}, []string{"a", "b"})
	e := New(Options{AgentDir: t.TempDir()})
	tests := []struct{ query, want string }{
		{"how many branches network xyzzy", `matched: "branches", "network"; not found: "xyzzy"; not searched (common words): "how", "many".`},
		{"xyzzy plugh", `nothing matches among the entries that left the context on this branch. No entry holds "xyzzy", "plugh".`},
		{"how many", `matched: "how", "many"`}, // nothing but stop words: they are searched
	}
	for _, tt := range tests {
		got := recallText(t, e, path, map[string]any{"query": tt.query})
		if !strings.Contains(got, tt.want) {
			t.Errorf("recall(%q) lacks %q:\n%s", tt.query, tt.want, got)
		}
	}
}

// TestRecallSnippetPlace: the snippet is centred where most query words
// stand together, the query as typed first, and shows that line whole; a
// query naming one exact token centres on it, not on its parts elsewhere.
func TestRecallSnippetPlace(t *testing.T) {
	var log strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&log, "step %d: rotor speed nominal, 417 checks passed\n", i)
	}
	log.WriteString("step 400: rotor_417 overheated at 93 C, shutting down\n")
	for i := 401; i < 800; i++ {
		fmt.Fprintf(&log, "step %d: rotor speed nominal\n", i)
	}
	path, ids := rankSession(t, map[string]string{
		"log":  "tool bash: " + log.String(),
		"cmd":  `call bash {"command":"go test ./relay/ -run TestRecallEval"} => --- FAIL: TestRecallEval (0.41s)` + "\n    eval_test.go:219: held back: 75 queries\nFAIL\nFAIL\tgithub.com/x/relay\t0.418s",
		"typo": "tool bash: the ember cache miss rate is high\nember and cache and miss apart: ember ... cache ... miss\nthe line with ember-cache miss rate 42% exactly",
	}, []string{"log", "cmd", "typo"})
	e := New(Options{AgentDir: t.TempDir()})
	snip := func(query, id string) string {
		got := recallText(t, e, path, map[string]any{"query": query, "limit": 5})
		for _, part := range strings.Split(got, "\n[") {
			if strings.Contains(part, "entryId "+id+" ·") {
				_, s, _ := strings.Cut(part, "\n    ")
				s, _, _ = strings.Cut(s, "\n")
				return s
			}
		}
		t.Fatalf("recall(%q) lacks %s:\n%s", query, id, got)
		return ""
	}
	if s := snip("rotor_417", ids["log"]); !strings.Contains(s, "step 400: rotor_417 overheated at 93 C, shutting down") {
		t.Errorf("the snippet of rotor_417 is not centred on it, whole line:\n%s", s)
	}
	if s := snip("overheated 93", ids["log"]); !strings.Contains(s, "rotor_417 overheated at 93 C") {
		t.Errorf("the snippet of two words is not where they stand together:\n%s", s)
	}
	if s := snip("ember-cache miss rate", ids["typo"]); !strings.Contains(s, "the line with ember-cache miss rate 42% exactly") {
		t.Errorf("the snippet is not where the query stands as typed:\n%s", s)
	}
	// A tool call with its result: the command, then the lines of the
	// output where the words stand.
	if s := snip("go test held back", ids["cmd"]); !strings.HasPrefix(s, "bash: go test ./relay/ -run TestRecallEval → ") || !strings.Contains(s, "held back: 75 queries") {
		t.Errorf("the snippet of a tool call with its result:\n%s", s)
	}
	if n := len([]rune(snip("step nominal", ids["log"]))); n > 2*snippetChars+20 {
		t.Errorf("a snippet of %d characters, over about %d", n, 2*snippetChars)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
