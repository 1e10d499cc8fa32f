package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInstallScript runs make install's script (scripts/install.sh) with
// PATH with and without the directory it installs into, and with another
// pi-session first on PATH: it says which, and the line to add.
func TestInstallScript(t *testing.T) {
	script, err := filepath.Abs("../../scripts/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "built")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "pi-session"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "prefix")
	into := filepath.Join(prefix, "bin")
	system := "/usr/bin:/bin"
	alias := "make install: to run pi under pi-session, add to your shell's startup file: alias pi=pi-session"
	installed := "make install: installed " + into + "/pi-session"
	for _, tt := range []struct {
		name, path, shell string
		want              []string
	}{
		{"not on PATH", system, "/bin/bash", []string{installed,
			"make install: " + into + " is not on your PATH, so your shell will not find pi-session; add this line to ~/.bashrc and open a new terminal:",
			`  export PATH="` + into + `:$PATH"`, alias}},
		{"not on PATH, zsh", system, "/usr/bin/zsh", []string{installed,
			"make install: " + into + " is not on your PATH, so your shell will not find pi-session; add this line to ~/.zshrc and open a new terminal:",
			`  export PATH="` + into + `:$PATH"`, alias}},
		{"not on PATH, fish", system, "/usr/bin/fish", []string{installed,
			"make install: " + into + " is not on your PATH, so your shell will not find pi-session; add this line to ~/.config/fish/config.fish and open a new terminal:",
			"  fish_add_path " + into, alias}},
		{"on PATH", system + ":" + into, "/bin/bash", []string{installed, alias}},
		{"on PATH with a trailing slash", into + "/:" + system, "/bin/bash", []string{installed, alias}},
		{"on PATH after another pi-session", other + ":" + into + ":" + system, "/bin/bash", []string{installed,
			"make install: " + other + "/pi-session comes before " + into + " on your PATH, so your shell runs that one; remove it or put " + into + " first", alias}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("bash", script, bin, prefix)
			cmd.Env = []string{"PATH=" + tt.path, "SHELL=" + tt.shell, "HOME=" + dir}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if diff := cmp.Diff(tt.want, strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if fi, err := os.Stat(filepath.Join(into, "pi-session")); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("installed file: %v, %v", fi, err)
			}
		})
	}
}
