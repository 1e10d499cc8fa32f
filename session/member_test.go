package session

import "testing"

func TestMemberString(t *testing.T) {
	raw := []byte(`{"role":"toolResult","toolName":"Agent","content":[{"type":"text","text":"\"toolName\":\"x\""}],"n":1,"toolName":"edit"}`)
	if got, ok := MemberString(raw, "toolName"); !ok || got != "edit" {
		t.Errorf(`MemberString(toolName) = %q, %v; want "edit", true (the last member wins)`, got, ok)
	}
	if _, ok := MemberString(raw, "n"); ok {
		t.Error("MemberString(n) of a number reports a string")
	}
	if got, ok := MemberString(raw, "missing"); ok || got != "" {
		t.Errorf("MemberString(missing) = %q, %v", got, ok)
	}
	if _, ok := MemberString([]byte(`[1]`), "a"); ok {
		t.Error("MemberString of an array reports a string")
	}
}
