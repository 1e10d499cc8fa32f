package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestUnquoteAndDecodedLen(t *testing.T) {
	for _, s := range []string{"plain", "tab\tnew\nline", `quote" back\ slash`, "ünïcödé \U0001F600", "\u2028\x01", ""} {
		raw, _ := json.Marshal(s)
		got, ok := Unquote(raw)
		if !ok || got != s {
			t.Errorf("Unquote(%s) = %q, %v", raw, got, ok)
		}
		if n := DecodedLen(raw); n != int64(len(s)) {
			t.Errorf("DecodedLen(%s) = %d, want %d", raw, n, len(s))
		}
		for skip := 0; skip <= len(s); skip++ {
			part, _ := AppendUnquoted(nil, raw, int64(skip), 3)
			if want := s[skip:min(len(s), skip+3)]; string(part) != want {
				t.Errorf("AppendUnquoted(%s, %d, 3) = %q, want %q", raw, skip, part, want)
			}
		}
	}
	if got, _ := Unquote([]byte(`"\ud83d\ude00 \ud800"`)); got != "\U0001F600 \uFFFD" {
		t.Errorf("surrogates: %q", got)
	}
	for _, bad := range []string{`"\x"`, `"\u12"`, `"\`, `"abc`, `abc"`, `"`, ``} {
		if got, ok := Unquote([]byte(bad)); ok {
			t.Errorf("Unquote(%s) = %q, ok; want not ok", bad, got)
		}
	}
}

// FuzzJSONScan checks the scanner against encoding/json: every document
// json.Valid accepts, the scanner accepts, and decoded strings agree.
func FuzzJSONScan(f *testing.F) {
	for _, d := range []string{`{"a": [1, {"b": null}], "c": "d"}`, `"a\"b\\"`, `[1e5,-0.5,true,null,{}]`, `{"a":"\ud83d\ude00"}`, `  7 `, `[`, `"\u00zz"`} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		d := []byte(doc)
		valid := json.Valid(d)
		if valid && Valid(d) != nil {
			t.Fatalf("json.Valid accepts %q, the scanner says %v", doc, Valid(d))
		}
		if !valid {
			return
		}
		i := SkipSpace(d, 0)
		// Invalid UTF-8 in a string is passed through as it is (encoding/json
		// replaces it with U+FFFD), so only valid text is compared.
		if d[i] == '"' && utf8.Valid(d) {
			var want string
			json.Unmarshal(d, &want)
			end, _ := SkipString(d, i)
			got, ok := Unquote(d[i:end])
			if !ok || got != want {
				t.Fatalf("Unquote(%s) = %q, %v; encoding/json says %q", doc, got, ok, want)
			}
			if n := DecodedLen(d[i:end]); n != int64(len(want)) {
				t.Fatalf("DecodedLen(%s) = %d, want %d", doc, n, len(want))
			}
		}
	})
}

func TestScanObject(t *testing.T) {
	d := []byte(` {"a": [1, 2], "b" : "x", "c": {}} `)
	var keys []string
	end, err := ScanObject(d, 0, 0, func(key []byte, vs int) (int, error) {
		k, _ := Unquote(key)
		keys = append(keys, k+"="+string(d[vs]))
		return SkipValue(d, vs, 1)
	})
	if err != nil || end != len(d)-1 || strings.Join(keys, " ") != `a=[ b=" c={` {
		t.Errorf("ScanObject = %d, %v, %q", end, err, keys)
	}
	end, err = ScanObject(d, 0, 0, func(key []byte, vs int) (int, error) { return -1, nil })
	if end != -1 || err != nil {
		t.Errorf("ScanObject stopped = %d, %v, want -1, nil", end, err)
	}
	for _, tt := range []struct {
		doc, want string
	}{
		{`[]`, "not an object at byte 0"},
		{`{"a" 1}`, "expected ':' at byte 5"},
		{`{"a":1 "b":2}`, "expected ',' or '}' at byte 7"},
		{`{"a":}`, "invalid character '}' at byte 5"},
		{`{1:2}`, "expected a member name at byte 1"},
		{`{"a":1`, "expected ',' or '}' at byte 6"},
	} {
		_, err := ScanObject([]byte(tt.doc), 0, 0, func(key []byte, vs int) (int, error) { return SkipValue([]byte(tt.doc), vs, 1) })
		if err == nil || err.Error() != tt.want {
			t.Errorf("ScanObject(%s) = %v, want %q", tt.doc, err, tt.want)
		}
	}
	if _, err := ScanObject([]byte(`{}`), 0, maxDepth, nil); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("ScanObject at the depth limit = %v", err)
	}
}
