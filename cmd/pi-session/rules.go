package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/relay"
	"github.com/pi-session/pi-session/rules"
	"github.com/pi-session/pi-session/session"
)

func init() {
	engineCommands["rules"] = engineCommand{
		help:  rulesUsage,
		about: "the user's standing rules a relay note would list (or how a text is read)",
		run:   cmdEngineRules,
	}
}

const rulesUsage = `usage: pi-session engine rules [--leaf ID] [--json] SESSION_FILE
       pi-session engine rules --text [--json] < MESSAGE

Prints the standing rules of the user's messages on the session's branch
ending at --leaf (default: the last entry): the current ones, then the
superseded ones with what replaced or revoked them, as a relay note lists
them. With --text, reads one message on standard input and prints each of
its sentences with how it is read: rule, revoke (cancels an earlier rule)
or not, the model's probability that it is a rule, and its lead-in.
Nothing is written.
`

func cmdEngineRules(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("engine rules")
	leaf := fs.String("leaf", "", "the leaf entry id")
	asJSON := fs.Bool("json", false, "print JSON")
	text := fs.Bool("text", false, "read one message on standard input")
	rest, code, done := parseFlags(inv, fs, inv.args, rulesUsage)
	if done {
		return code
	}
	if *text {
		if len(rest) != 0 {
			return inv.errorf(exitUsage, "engine rules --text: reads standard input, got %d arguments (see pi-session engine rules --help)", len(rest))
		}
		msg, n, err := readMessage(inv.stdin)
		if err != nil {
			return inv.errorf(1, "engine rules: standard input: %v", err)
		}
		if msg.Partial() {
			fmt.Fprintf(inv.stderr, "pi-session: the message has %d bytes: only its first %d KB and last %d KB are read for rules\n", n, rules.ReadHead>>10, rules.ReadTail>>10)
		}
		return printClassified(inv, rules.Default().ClassifyMessage(msg), *asJSON)
	}
	if len(rest) != 1 {
		return inv.errorf(exitUsage, "engine rules: want one SESSION_FILE, got %d arguments (see pi-session engine rules --help)", len(rest))
	}
	f, _, err := openOnce(inv, rest[0])
	if err != nil {
		return inv.errorf(1, "engine rules: %v", err)
	}
	branch, err := f.Branch(*leaf)
	if err != nil {
		return inv.errorf(1, "engine rules: %v", err)
	}
	facts := relay.Gather(f.Header, branch, "")
	for i, m := range facts.Skimmed {
		if i == 3 {
			fmt.Fprintf(inv.stderr, "pi-session: %d more messages were read for rules by their ends only\n", len(facts.Skimmed)-i)
			break
		}
		fmt.Fprintf(inv.stderr, "pi-session: message %s has %d characters: only its first %d bytes and last %d bytes were read for rules\n", m.EntryID, m.Chars, m.Head, m.Tail)
	}
	if fg := facts.RulesForgotten; fg.Current > 0 {
		fmt.Fprintf(inv.stderr, "pi-session: %d older current rules are not listed: past the %d rules kept (the oldest from message %s)\n", fg.Current, rules.MaxRules, fg.EntryID)
	}
	if *asJSON {
		type out struct {
			Text         string `json:"text"`
			Lead         string `json:"lead,omitempty"`
			EntryID      string `json:"entryId"`
			Current      bool   `json:"current"`
			SupersededBy string `json:"supersededBy,omitempty"`
			Revoked      bool   `json:"revoked,omitempty"`
		}
		list := []out{}
		for _, r := range facts.Constraints {
			list = append(list, out{r.Text, r.Lead, r.EntryID, r.Current(), r.SupersededBy, r.Revoked})
		}
		return writeJSON(inv, list)
	}
	var cur, old []rules.Rule
	for _, r := range facts.Constraints {
		if r.Current() {
			cur = append(cur, r)
		} else {
			old = append(old, r)
		}
	}
	fmt.Fprintf(inv.stdout, "%d current rules\n", len(cur))
	for _, r := range cur {
		fmt.Fprintf(inv.stdout, "- %s  [%s]\n", clip.Visible(r.Text), r.EntryID)
	}
	if len(old) > 0 {
		fmt.Fprintf(inv.stdout, "%d superseded\n", len(old))
		for _, r := range old {
			how := "replaced by"
			if r.Revoked {
				how = "revoked by"
			}
			fmt.Fprintf(inv.stdout, "- %s  -> %s: %s\n", clip.Visible(r.Text), how, clip.Visible(r.SupersededBy))
		}
	}
	if f.Header == nil {
		fmt.Fprintf(inv.stderr, "pi-session: %s: %v\n", rest[0], session.ErrNoHeader)
	}
	return 0
}

// readMessage reads a message from r as the rules read one: whole, or of a
// longer one its first and its last bytes (rules.ReadHead, rules.ReadTail),
// holding no more; n is its length in bytes.
func readMessage(r io.Reader) (msg rules.Message, n int64, err error) {
	const whole = rules.ReadHead + rules.ReadTail
	head := make([]byte, 0, whole)
	var tail []byte
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		n += int64(k)
		chunk := buf[:k]
		if room := whole - len(head); room > 0 {
			take := min(room, len(chunk))
			head, chunk = append(head, chunk[:take]...), chunk[take:]
		}
		if tail = append(tail, chunk...); len(tail) > 2*rules.ReadTail {
			tail = append(tail[:0], tail[len(tail)-rules.ReadTail:]...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return msg, n, err
		}
	}
	if len(tail) == 0 {
		return rules.Message{Text: string(head)}, n, nil
	}
	// The head's own end is part of the message's end when less follows.
	t := append(head[max(len(head)-rules.ReadTail, 0):len(head):len(head)], tail...)
	return rules.Message{Text: string(head), Tail: string(t)}, n, nil
}

func printClassified(inv *invocation, units []rules.Classified, asJSON bool) int {
	if asJSON {
		type out struct {
			Text   string  `json:"text"`
			Lead   string  `json:"lead,omitempty"`
			Label  string  `json:"label"`
			Rule   float32 `json:"rule"`
			Quoted bool    `json:"quoted,omitempty"`
		}
		list := []out{}
		for _, u := range units {
			list = append(list, out{u.Text, u.Lead, rules.LabelName[u.Label], u.Scores.Rule(), u.Quoted})
		}
		return writeJSON(inv, list)
	}
	for _, u := range units {
		lead := ""
		if u.Lead != "" {
			lead = " (under " + clip.Visible(u.Lead) + ")"
		}
		how := rules.LabelName[u.Label]
		if u.Quoted {
			how = "quoted"
		}
		fmt.Fprintf(inv.stdout, "%-6s %.2f  %s%s\n", how, u.Scores.Rule(), clip.Visible(u.Text), lead)
	}
	return 0
}

func writeJSON(inv *invocation, v any) int {
	enc := json.NewEncoder(inv.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return inv.errorf(1, "engine rules: %v", err)
	}
	return 0
}
