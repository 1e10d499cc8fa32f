package recap

import "github.com/pi-session/pi-session/clip"

// Answer is one reply of the recap model, as pi-ai reports it.
type Answer struct {
	Text         string `json:"text"`         // the reply's text blocks, joined
	StopReason   string `json:"stopReason"`   // stop, length, toolUse, error, aborted
	ErrorMessage string `json:"errorMessage"` // set with stopReason error
	Reasoning    bool   `json:"reasoning"`    // the attempt ran with reasoning on
}

// Verdict says what to do with an answer: use the recap, retry once with
// reasoning off, or give up with an error for the user (and write the
// local recap).
type Verdict struct {
	OK      bool   `json:"ok"`
	Recap   Recap  `json:"recap"`
	Retry   bool   `json:"retry"`
	Aborted bool   `json:"aborted"`
	Error   string `json:"error,omitempty"`
}

// The errors a failed recap reports.
const (
	ErrTextTruncated = "The summary model response hit the token limit and was truncated."
	ErrTextInvalid   = "The summary model did not return valid recap JSON."
	ErrTextFailed    = "The summary model request failed"
)

// Judge decides about an answer. A length stop or an answer that does not
// parse, from an attempt with reasoning, is retried once without
// reasoning, which needs far fewer tokens; transport failures are not
// retried.
func Judge(a Answer) Verdict {
	switch a.StopReason {
	case "error":
		msg := ErrTextFailed + "."
		if a.ErrorMessage != "" {
			msg = ErrTextFailed + ": " + clip.Echo(clean(a.ErrorMessage))
		}
		return Verdict{Error: msg}
	case "aborted":
		return Verdict{Aborted: true, Error: "The summary model request was aborted."}
	case "length":
		if a.Reasoning {
			return Verdict{Retry: true, Error: ErrTextTruncated}
		}
		return Verdict{Error: ErrTextTruncated}
	}
	r, err := Parse(a.Text)
	if err == nil {
		return Verdict{OK: true, Recap: r}
	}
	return Verdict{Retry: a.Reasoning, Error: ErrTextInvalid}
}
