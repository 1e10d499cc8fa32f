package session

// MemberString returns the string value of the top-level member key of the
// object raw, and false when it is absent or not a string.
func MemberString(raw []byte, key string) (string, bool) {
	s := memberSpan(raw, key)
	if !s.isString(raw) {
		return "", false
	}
	return s.str(raw), true
}
