package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time by the Makefile (-ldflags -X main.version=...).
var version = ""

// Version is pi-session's version: the build-time stamp, else the module
// version Go recorded (a tag, or a pseudo-version from the commit).
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

const versionUsage = `usage: pi-session version

Prints pi-session's version and the pi it runs, with pi's version. Exit
status 0, also when pi is missing or broken (the line says so).
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
