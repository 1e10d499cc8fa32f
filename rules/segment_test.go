package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Unit
	}{
		{"sentences of a paragraph", "Fix the build. Never push to main! Why?",
			[]Unit{{Text: "Fix the build."}, {Text: "Never push to main!"}, {Text: "Why?"}}},
		{"abbreviations and file names do not end a sentence", "Keep e.g. notes.txt as it is. Use v1.2 only.",
			[]Unit{{Text: "Keep e.g. notes.txt as it is."}, {Text: "Use v1.2 only."}}},
		{"CJK sentence ends need no space", "テストを実行してください。mainには直接プッシュしないこと。",
			[]Unit{{Text: "テストを実行してください。"}, {Text: "mainには直接プッシュしないこと。"}}},
		{"Chinese with full-width marks", "先修复构建！请勿修改 vendor 目录。可以吗？",
			[]Unit{{Text: "先修复构建！"}, {Text: "请勿修改 vendor 目录。"}, {Text: "可以吗？"}}},
		{"bullets under a heading take it as their lead", "## Testing\n- Run go test -race.\n- Never skip a failing test.",
			[]Unit{{Text: "Run go test -race.", Lead: "Testing"}, {Text: "Never skip a failing test.", Lead: "Testing"}}},
		{"an introducing line leads its list", "For the database:\n1. Each migration gets a down script.\n2) Never drop a column.",
			[]Unit{{Text: "For the database:", Intro: true}, {Text: "Each migration gets a down script.", Lead: "For the database"}, {Text: "Never drop a column.", Lead: "For the database"}}},
		{"a labelled item keeps its label as lead and the item whole", "- `pom.xml`: managed by the release plugin. Do not change this file.",
			[]Unit{
				{Text: "`pom.xml`: managed by the release plugin.", Lead: "`pom.xml`", Item: "`pom.xml`: managed by the release plugin. Do not change this file."},
				{Text: "Do not change this file.", Lead: "`pom.xml`", Item: "`pom.xml`: managed by the release plugin. Do not change this file."},
			}},
		{"nested items lead with their parent", "- Git:\n  - Rebase, never merge.\n  - Sign commits.",
			[]Unit{{Text: "Git:", Intro: true}, {Text: "Rebase, never merge.", Lead: "Git"}, {Text: "Sign commits.", Lead: "Git"}}},
		{"fenced code is skipped; the rule after it is kept", "Run this:\n```sh\nnever-run-me --force\n```\nDon't commit the output.",
			[]Unit{{Text: "Run this:", Intro: true}, {Text: "Don't commit the output."}}},
		{"blockquotes are quoted", "> Never use globals.\nThat is what the old guide said.",
			[]Unit{{Text: "Never use globals.", Quoted: true}, {Text: "That is what the old guide said."}}},
		{"a parenthesis of a few words is a unit too", "Refactor the cache (and please never force-push).",
			[]Unit{{Text: "Refactor the cache (and please never force-push)."}, {Text: "and please never force-push", Paren: true}}},
		{"hard-wrapped lines are joined", "Please make sure that every migration\nhas a down script.",
			[]Unit{{Text: "Please make sure that every migration has a down script."}}},
		{"a sentence ending in a colon before a list introduces it", "We port the service. Requirements:\n1. Every endpoint keeps its URL.",
			[]Unit{{Text: "We port the service."}, {Text: "Requirements:", Intro: true}, {Text: "Every endpoint keeps its URL."}}},
		{"lines of chat are separate", "fix the login bug\nnever push to main",
			[]Unit{{Text: "fix the login bug"}, {Text: "never push to main"}}},
		{"Japanese bullets", "・コメントは日本語で書くこと\n・テストは必ず通す",
			[]Unit{{Text: "コメントは日本語で書くこと"}, {Text: "テストは必ず通す"}}},
		{"emphasis heading", "**Style**\n- Keep functions short.",
			[]Unit{{Text: "Keep functions short.", Lead: "Style"}}},
	}
	for _, tt := range tests {
		got := Split(tt.in)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s: Split(%q) mismatch (-want +got):\n%s", tt.name, tt.in, d)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"ＡＢＣ　１２３":     "abc 123",
		"ﾃｽﾄ":         "テスト",
		"Don’t  PUSH": "don't push",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitContinuation(t *testing.T) {
	got := Split("- Run the whole suite\n  before you push.\n- Never force-push.")
	want := []Unit{{Text: "Run the whole suite before you push."}, {Text: "Never force-push."}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Split mismatch (-want +got):\n%s", d)
	}
}
