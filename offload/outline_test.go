package offload

import "testing"

func TestGrepPath(t *testing.T) {
	tests := []struct {
		line string
		path string
		ok   bool
	}{
		{"src/main.go:12:func main() {", "src/main.go", true},
		{"README.md:3-context line", "README.md", true},
		{"a b/c.txt:7:x", "a b/c.txt", true},
		{"2026-11-30T10:00:00Z INFO step 1", "", false}, // a timestamp, not path:line
		{"12:34:56 started", "", false},
		{"main.go:0:x", "", false},
		{"with space:12:x", "", false},
		{" indented.go:1:x", "", false},
		{"file.go:abc:x", "", false},
	}
	for _, tt := range tests {
		p, ok := grepPath([]byte(tt.line))
		path := string(p)
		if path != tt.path || ok != tt.ok {
			t.Errorf("grepPath(%q) = %q, %v; want %q, %v", tt.line, path, ok, tt.path, tt.ok)
		}
	}
}
