package main

import (
	"os"
	"strings"
)

// environ is an environment as a list of KEY=value strings, in order, with
// later entries winning as in exec.
type environ struct{ kv []string }

func newEnviron(kv []string) *environ { return &environ{kv: append([]string(nil), kv...)} }

// Get returns the value of key, "" when unset.
func (e *environ) Get(key string) string {
	v, _ := e.Lookup(key)
	return v
}

// Lookup returns the value of key and whether it is set.
func (e *environ) Lookup(key string) (string, bool) {
	for i := len(e.kv) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.kv[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// With returns a copy of the environment with the given KEY=value pairs
// replacing any earlier values of those keys.
func (e *environ) With(pairs ...string) []string {
	drop := map[string]bool{}
	for _, p := range pairs {
		k, _, _ := strings.Cut(p, "=")
		drop[k] = true
	}
	out := make([]string, 0, len(e.kv)+len(pairs))
	for _, kv := range e.kv {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, pairs...)
}

// List is the environment as given.
func (e *environ) List() []string { return e.kv }

// workingDir is the process's current directory; $PWD when it names the
// same directory (keeps the user's symlinked spelling, as shells do).
func workingDir(e *environ) string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if pwd := e.Get("PWD"); pwd != "" && pwd != wd {
		a, err1 := os.Stat(pwd)
		b, err2 := os.Stat(wd)
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			return pwd
		}
	}
	return wd
}
