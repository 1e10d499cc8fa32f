#!/usr/bin/env bash
# make fuzz: run every fuzz target for a while and keep what the fuzzer
# found interesting in <package>/testdata/fuzz/<target>/, the corpus that
# go test replays on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-30s}
cache=$(go env GOCACHE)/fuzz
module=$(go list -m)
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target ($time)"
    go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -fuzzminimizetime 5s 2>&1 | tail -2
    if [ -d "$cache/$pkg/$target" ]; then
      mkdir -p "$dir/testdata/fuzz/$target"
      cp -n "$cache/$pkg/$target"/* "$dir/testdata/fuzz/$target/" 2>/dev/null || true
    fi
  done
done
echo "corpus files: $(find . -path '*/testdata/fuzz/*' -type f | wc -l) (module $module)"
