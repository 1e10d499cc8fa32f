package session

import "testing"

func TestMember(t *testing.T) {
	raw := []byte(`{"role":"toolResult","toolName":"Agent","content":[{"type":"text","text":"\"toolName\":\"x\""}],"n":1,"toolName":"edit"}`)
	if got, ok := MemberString(raw, "toolName"); !ok || got != "edit" {
		t.Errorf(`MemberString(toolName) = %q, %v; want "edit", true (the last member wins)`, got, ok)
	}
	if got := string(Member(raw, "n")); got != "1" {
		t.Errorf("Member(n) = %q, want 1", got)
	}
	if _, ok := MemberString(raw, "n"); ok {
		t.Error("MemberString(n) of a number reports a string")
	}
	if got := Member(raw, "missing"); got != nil {
		t.Errorf("Member(missing) = %q, want nil", got)
	}
	if got := Member([]byte(`[1]`), "a"); got != nil {
		t.Errorf("Member of an array = %q, want nil", got)
	}
}
