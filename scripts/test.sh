#!/usr/bin/env bash
# make test: every test, printed as plain go test prints it, then the
# totals (tests passed, skipped, failed, and which; scripts/testtotals).
# The tests run with a private TMPDIR, removed at the end: pi and Node
# keep their caches in TMPDIR (jiti/, node-compile-cache/), pi writes its
# bash output files there, and a test that forgets a temporary directory
# leaves it there; none of it stays in the user's TMPDIR. What tests left
# in it besides those caches and pi-session's socket directory is named,
# so the test can be fixed.
# Usage: scripts/test.sh [go test flags and packages...] (default ./...)
set -uo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pst.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# Others may enter it, as they may enter /tmp: a test runs a copy of its
# binary as another user (hooks' TestPeerUIDRefused); what tests make
# inside is theirs (t.TempDir is 0700).
chmod 0755 "$tmp"
"$go" build -o "$tmp/testtotals" ./scripts/testtotals || exit 1
[ $# -gt 0 ] || set -- ./...
TMPDIR=$tmp "$go" test -json -count=1 -timeout 30m "$@" | "$tmp/testtotals"
status=$?
# Expected there: go's build dirs, pi's and Node's caches, and
# pi-session's socket directory (pi-session-<uid>, for hosts whose
# socket path in the agent dir would be too long).
left=$(cd "$tmp" && ls -A | grep -v -x -e testtotals -e jiti -e node-compile-cache -e 'go-build[0-9]*' -e 'pi-session-[0-9]*' || true)
if [ -n "$left" ]; then
  echo "TMPDIR: the tests left $(echo "$left" | wc -l) entries behind (removed now): $(echo "$left" | head -10 | tr '\n' ' ')"
else
  echo "TMPDIR: the tests left nothing behind (their private TMPDIR, with pi's and Node's caches, is removed now)"
fi
exit $status
