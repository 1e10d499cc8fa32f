package recap

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-session/pi-session/session"
)

// FuzzParse: any answer parses without a panic, and an accepted one has
// non-empty fields within the caps, free of escapes and control
// characters.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"recap":"Did it.","next":"Ship it."}`,
		"```json\n{\"recap\":\"A\",\"next\":\"Next: B\"}\n```",
		`{"recap":"\u001b]8;;x\u0007A\u001b]8;;\u0007","next":"B"} {"recap":"C","next":"D"}`,
		`{"recap":"A","next":"B","x":1}`,
		"{\"recap\":\"" + strings.Repeat("ü", 700) + "\",\"next\":\"x\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		r, err := Parse(answer)
		if err != nil {
			return
		}
		for name, v := range map[string]string{"recap": r.Recap, "next": r.Next} {
			limit := RecapMaxChars
			if name == "next" {
				limit = NextMaxChars
			}
			if v == "" || utf8.RuneCountInString(v) > limit {
				t.Fatalf("Parse(%q).%s = %q: empty or over %d characters", answer, name, v, limit)
			}
			for _, c := range v {
				if c < 0x20 || c == 0x7f || 0x80 <= c && c < 0xa0 {
					t.Fatalf("Parse(%q).%s = %q holds control character %U", answer, name, v, c)
				}
			}
		}
	})
}

// FuzzRedact: no panic, and redacting twice changes nothing.
func FuzzRedact(f *testing.F) {
	for _, c := range secretCases {
		f.Add(c.text)
	}
	for _, c := range attackSecrets() {
		f.Add(c.text)
	}
	for _, l := range append(append([]lookAlike{}, lookAlikes...), attackLookAlikes...) {
		f.Add(l.text)
	}
	for _, p := range keyPlaces() {
		secret, _ := p.render(devKeySecrets[0].words, pkID)
		look, _ := p.render(devKeyLooks[0].words, devKeyLooks[0].values[0])
		f.Add(secret + "\n" + look)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once, _ := Redact(s)
		twice, n := Redact(once)
		if twice != once {
			t.Fatalf("Redact is not idempotent (%d more):\n in: %q\n 1st: %q\n 2nd: %q", n, s, once, twice)
		}
	})
}

// FuzzRedactJSON: no panic on any bytes, cut JSON included.
func FuzzRedactJSON(f *testing.F) {
	f.Add([]byte(`{"env":{"GITHUB_TOKEN":"x1y2z3w4v5"},"password":1234,"auth":{"user":"u","pass":"p"}}`))
	f.Add([]byte(`{"command":"mysql -pSecret1 \u0041","arr":[true,null,-1.5e3,"x"]}`))
	f.Add([]byte(`{"cut":"abc\`))
	f.Add([]byte(`[{"a":`))
	f.Add([]byte(devKeyDocs[0].text))
	f.Add([]byte(`{"private_key_ids":["` + pkID + `"],"token_usage":{"cache_key":"` + pkID + `"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, _ := RedactJSON(raw)
		_ = out
	})
}

// FuzzCapText: capped text is never over the cap and is valid UTF-8 when
// its input is.
func FuzzCapText(f *testing.F) {
	f.Add("password=a b c d password=e", 12)
	f.Add(strings.Repeat("é", 30), 7)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n%4096 + 1
		if n < 0 {
			n = -n
		}
		out, _ := capText(s, n)
		if len(out) > n {
			t.Fatalf("capText(%q, %d) = %d bytes", s, n, len(out))
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("capText(%q, %d) = %q: invalid UTF-8", s, n, out)
		}
	})
}

// FuzzPrepare: any session file prepares without a panic, and the request
// is never over the caps.
func FuzzPrepare(f *testing.F) {
	for _, name := range []string{"kinds.jsonl", "tools.jsonl"} {
		b, err := readTestdata(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"toolResult","toolName":"x\ny","content":[{"type":"text","text":"` + strings.Repeat("z", 6000) + `"}]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := session.Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, run := range []Run{{}, {Last: true}} {
			p, err := Prepare(sf, run)
			if err != nil || p.Empty || p.Gone {
				continue
			}
			body := strings.TrimSuffix(strings.TrimPrefix(p.UserMessage, "<recent_work>\n"), "\n</recent_work>\n\nWrite the recap JSON for the work above.")
			if len(body) > TranscriptCap {
				t.Fatalf("transcript of %d bytes, cap %d", len(body), TranscriptCap)
			}
			if !strings.HasPrefix(p.UserMessage, "<recent_work>\n") || strings.Count(p.UserMessage, "</recent_work>") != 1 {
				t.Fatalf("user message not wrapped once:\n%s", p.UserMessage)
			}
		}
	})
}
