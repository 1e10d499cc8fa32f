# The tempo module: a duration parser whose "ms" unit is read as minutes.
mkdir -p tempo/duration tempo/cmd/tempo
cat > tempo/go.mod <<'EOF'
module example.com/tempo

go 1.22
EOF
cat > tempo/duration/parse.go <<'EOF'
// Package duration parses human durations such as "1h30m" or "2d 4h".
package duration

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// units maps a unit suffix to its length.
var units = map[string]time.Duration{
	"ms": time.Millisecond,
	"s":  time.Second,
	"m":  time.Minute,
	"h":  time.Hour,
	"d":  24 * time.Hour,
	"w":  7 * 24 * time.Hour,
}

// Parse reads a duration made of number+unit groups, optionally separated
// by spaces.
func Parse(s string) (time.Duration, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	if s == "" {
		return 0, fmt.Errorf("duration: empty string")
	}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("duration: expected a number at %q", s)
		}
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, err
		}
		j := i
		for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
			j++
		}
		unit := s[i:j]
		d, ok := units[unit[:1]]
		if !ok {
			return 0, fmt.Errorf("duration: unknown unit %q", unit)
		}
		total += time.Duration(n) * d
		s = s[j:]
	}
	return total, nil
}

// Format writes d with the largest units first, e.g. 26h -> "1d2h".
func Format(d time.Duration) string {
	var b strings.Builder
	for _, u := range []string{"w", "d", "h", "m", "s"} {
		if n := d / units[u]; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u)
			d -= n * units[u]
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}
EOF
cat > tempo/duration/parse_test.go <<'EOF'
package duration

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"1h30m", 90 * time.Minute},
		{"2d 4h", 52 * time.Hour},
		{"1w", 168 * time.Hour},
		{"250ms", 250 * time.Millisecond},
		{"45s", 45 * time.Second},
		{"1h 1m 1s", time.Hour + time.Minute + time.Second},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "h", "5y", "3 parsecs"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := map[time.Duration]string{
		26 * time.Hour:             "1d2h",
		90 * time.Second:           "1m30s",
		0:                          "0s",
		8*24*time.Hour + time.Hour: "1w1d1h",
	}
	for d, want := range tests {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Parse("2d 4h 30m 15s")
	}
}
EOF
cat > tempo/cmd/tempo/main.go <<'EOF'
// Command tempo converts durations: tempo 1h30m prints 5400 seconds.
package main

import (
	"fmt"
	"os"

	"example.com/tempo/duration"
)

func main() {
	for _, a := range os.Args[1:] {
		d, err := duration.Parse(a)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tempo:", err)
			os.Exit(1)
		}
		fmt.Printf("%s = %.0f seconds (%s)\n", a, d.Seconds(), duration.Format(d))
	}
}
EOF
(cd tempo && git init -q && git add -A && git commit -qm "tempo: duration parser and command")
