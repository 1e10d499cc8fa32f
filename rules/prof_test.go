package rules

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func BenchmarkLongSentences(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the cache module parser build test file error value config handler request server client index session note relay store read write update merge branch commit")
	var msgs []Message
	for i := 0; i < 1000; i++ {
		var s []string
		for j := 0; j < 20+r.IntN(40); j++ {
			s = append(s, words[r.IntN(len(words))])
		}
		msgs = append(msgs, Message{EntryID: "e", Text: strings.Join(s, " ")})
	}
	for b.Loop() {
		Extract(msgs)
	}
}
