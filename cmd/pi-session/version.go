package main

import (
	"context"
	_ "embed"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set at build time by the Makefile (-ldflags -X
// main.version=...), from `git describe` of the nearest v* tag.
var version = ""

// archiveVersion is the version git archive writes into version.txt (the
// file is export-subst in .gitattributes), so a source archive without .git
// still knows its release; in a clone it holds the unexpanded placeholder.
//
//go:embed version.txt
var archiveVersion string

// Version is pi-session's version: see versionFrom.
func Version() string {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(version, archiveVersion, bi)
}

// versionFrom picks pi-session's version from, in order: the Makefile's
// stamp (v0.1.0, v0.1.0-3-g1a2b3c4, ...-dirty); the module version Go
// recorded (a tag with `go install ...@v0.1.0`, or a pseudo-version such as
// v0.0.0-20261202012304-b8b4c0784e79 when built in a clone: `go install
// ./cmd/pi-session`); the tag a source archive was made from; the commit Go
// recorded (devel-b8b4c0784e79, -dirty with local changes); else "devel".
func versionFrom(stamp, archive string, bi *debug.BuildInfo) string {
	if s := strings.TrimSpace(stamp); s != "" {
		return s
	}
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	if a := strings.TrimSpace(archive); a != "" && !strings.Contains(a, "$Format") && !strings.ContainsAny(a, " \t\n") {
		return a
	}
	if bi != nil {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if dirty {
				rev += "-dirty"
			}
			return "devel-" + rev
		}
	}
	return "devel"
}

const versionUsage = `usage: pi-session version

Prints pi-session's version and the pi it runs, with pi's version (the
same as pi-session --version). Exit status 0, also when pi is missing or
broken (the line says so).
`

// cmdVersion prints pi-session's version and the pi it would run.
func cmdVersion(ctx context.Context, inv *invocation) int {
	args, code, done := parseFlags(inv, newFlagSet("version"), inv.args, versionUsage)
	if done {
		return code
	}
	if len(args) > 0 {
		return inv.errorf(exitUsage, "version takes no arguments (see pi-session version --help)")
	}
	return printVersions(ctx, inv)
}

// printVersions prints pi-session's version and the pi it would run, with
// pi's own version: `pi-session version` and `pi-session --version`.
func printVersions(ctx context.Context, inv *invocation) int {
	fmt.Fprintf(inv.stdout, "pi-session %s (%s, %s/%s)\n", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	pi, err := findPi(inv.env)
	if err != nil {
		fmt.Fprintf(inv.stdout, "pi: not found (%v)\n", err)
		return 0
	}
	v, err := versionOf(ctx, inv.env, pi)
	if err != nil {
		fmt.Fprintf(inv.stdout, "pi: %s (version unknown: %v)\n", pi, err)
		return 0
	}
	fmt.Fprintf(inv.stdout, "pi: %s (%s)\n", pi, v)
	return 0
}
