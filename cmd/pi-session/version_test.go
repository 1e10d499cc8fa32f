package main

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVersionFrom(t *testing.T) {
	vcs := func(main string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/pi-session/pi-session", Version: main}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	const placeholder = "$Format:%(describe:tags=true,match=v[0-9]*)$\n"
	const rev = "b8b4c0784e79d38d5cdb00227dd5962279188db7"
	for _, tc := range []struct {
		name, stamp, archive string
		bi                   *debug.BuildInfo
		want                 string
	}{
		{"make build at a tag", "v0.1.0", placeholder, vcs("v0.0.0-20261202012304-b8b4c0784e79"), "v0.1.0"},
		{"make build after a tag, with changes", "v0.1.0-3-gb8b4c07-dirty\n", placeholder, vcs("(devel)"), "v0.1.0-3-gb8b4c07-dirty"},
		{"go install module@version", "", placeholder, vcs("v0.1.0"), "v0.1.0"},
		{"go install ./cmd/pi-session in a clone", "", placeholder, vcs("v0.0.0-20261202012304-b8b4c0784e79+dirty", "vcs.revision", rev), "v0.0.0-20261202012304-b8b4c0784e79+dirty"},
		{"a source archive of a tag", "", "v0.1.0\n", vcs("(devel)"), "v0.1.0"},
		{"a source archive of an untagged commit", "", "\n", vcs("(devel)"), "devel"},
		{"an archive line that is no version", "", "v0.1.0 and more\n", vcs("(devel)"), "devel"},
		{"built without a module version, with the commit", "", placeholder, vcs("(devel)", "vcs.revision", rev, "vcs.modified", "false"), "devel-b8b4c0784e79"},
		{"the same with local changes", "", placeholder, vcs("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "devel-b8b4c0784e79-dirty"},
		{"-buildvcs=false outside git", "", placeholder, vcs("(devel)"), "devel"},
		{"no build information", "", placeholder, nil, "devel"},
		{"an empty stamp", "  ", placeholder, vcs(""), "devel"},
	} {
		if diff := cmp.Diff(tc.want, versionFrom(tc.stamp, tc.archive, tc.bi)); diff != "" {
			t.Errorf("%s: versionFrom (-want +got):\n%s", tc.name, diff)
		}
	}
}
