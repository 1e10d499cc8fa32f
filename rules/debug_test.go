package rules

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

func TestDebugCase(t *testing.T) {
	name := os.Getenv("CASE")
	if name == "" {
		t.Skip()
	}
	data, _ := os.ReadFile("testdata/sessions/" + name + ".json")
	var c sessionCase
	json.Unmarshal(data, &c)
	var msgs []Message
	for i, m := range c.Messages {
		msgs = append(msgs, Message{EntryID: fmt.Sprintf("m%d", i+1), Text: m})
		for _, u := range Default().Classify(m) {
			fmt.Printf("m%d %-6s %.2f rev=%.2f rvk=%.2f %q lead=%q\n", i+1, LabelName[u.Label], u.Scores.Rule(), u.Scores[LabelRevise], u.Scores[LabelRevoke], u.Text, u.Lead)
		}
	}
	for _, r := range Extract(msgs) {
		fmt.Printf("RULE %v %q <- %q\n", r.Current(), r.Text, r.SupersededBy)
	}
	fmt.Println("CUR", c.Current)
	fmt.Println("SUP", c.Superseded)
	fmt.Println("NOT", c.Not)
}
