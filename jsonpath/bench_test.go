package jsonpath

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchDoc is a 16 MB document: {"items":[{"id":0,"name":"item 0",...},...]}.
func benchDoc(b *testing.B) ([]byte, int) {
	b.Helper()
	var d []byte
	d = append(d, `{"items":[`...)
	n := 0
	for ; len(d) < 16<<20; n++ {
		if n > 0 {
			d = append(d, ',')
		}
		d = fmt.Appendf(d, `{"id":%d,"name":"item %d","tags":["a","b"],"score":%d.5,"nested":{"ok":true,"note":null}}`, n, n, n%100)
	}
	return append(d, "]}"...), n
}

// BenchmarkSelect runs queries over a 16 MB document in place, against the
// baseline of decoding the document with encoding/json and indexing the
// result (measured in the same run): x-baseline is the query's time over
// the baseline's.
func BenchmarkSelect(b *testing.B) {
	doc, n := benchDoc(b)
	last := n - 1
	const runs = 3
	start := time.Now()
	for range runs {
		var v map[string][]map[string]any
		if err := json.Unmarshal(doc, &v); err != nil || v["items"][last]["name"] != fmt.Sprint("item ", last) {
			b.Fatalf("baseline: %v", err)
		}
	}
	baseline := time.Since(start) / runs
	for _, tt := range []struct{ name, query string }{
		{"index", fmt.Sprintf("$.items[%d].name", last)},
		{"filter", fmt.Sprintf("$.items[?@.id == %d].name", last)},
		{"descendants", "$..note"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			q, err := Parse(tt.query)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if nodes, err := q.Select(doc); err != nil || len(nodes) == 0 {
					b.Fatalf("%s: %d nodes, %v", tt.query, len(nodes), err)
				}
			}
			b.ReportMetric(float64(baseline.Milliseconds()), "baseline-ms")
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(baseline), "x-baseline")
		})
	}
}
