#!/usr/bin/env bash
# make bench: every benchmark, each printing its figures and its ratio
# against a baseline measured in the same run (the machine is noisy, so
# absolute times do not carry over). Nothing here is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
run() { # title, package, bench regexp, benchtime
  echo "== $1"
  go test "$2" -run '^$' -bench "$3" -benchtime "$4" -timeout 60m 2>&1 | grep -E '^(Benchmark|---|FAIL|panic)' || true
}
run "supervisor: terminal passthrough (cat 200 MB) vs script -qfc" ./e2e 'Passthrough' 3x
run "supervisor: added start-up latency around true" ./e2e 'Startup' 1x
run "supervisor: idle resident memory" ./e2e 'IdleMemory' 1x
run "rotate: 8 writer processes x 200k lines of 200 B vs plain O_APPEND" ./rotate 'AppendProcesses/writers=8' 1600000x
run "rotate: one writer vs plain O_APPEND" ./rotate 'AppendProcesses/writers=1|Append$' 200000x
run "status: pruning pass over 100k records, listing 10k" ./status 'Prune|List' 20x
run "status: a record write under the lock with the ownership check vs the atomic write alone" ./status 'Update' 300x
run "hooks: extension -> engine round trip, 10k tiny calls vs Node-to-Node echo" ./hooks '^BenchmarkRoundTrip$' 1x
run "hooks: 16 MiB extension -> engine (bulk bytes, JSON, file) vs raw socket copy" ./hooks '^BenchmarkBulk$' 1x
run "hooks: Go client round trip" ./hooks '^BenchmarkGoRoundTrip$' 20000x
run "offload: tool_result hook for 16 MiB through real pi, engine vs transfer" ./e2e 'ToolResultHook16MB' 3x
run "jsonpath: queries over a 16 MB document in place vs decoding it with encoding/json" ./jsonpath 'Select' 5x
run "offload: 64 KB-100 MB payloads vs sha256sum+cp, grep -c, jq (OFFLOAD_BENCH_SIZES limits sizes)" ./offload 'Engine' 1x
run "hooks+offload: engine host peak RSS for a 1/16/100 MB tool result over its socket vs in process (HOST_MEMORY_SIZES limits sizes)" ./e2e 'HostMemory' 3x
run "session: reader on a 200 MB session vs cat, resume after 1 MB" ./session '.' 3x
run "budget: per-turn cost of the budget hooks through real pi (40 and 80 tool turns) vs the same extension without its budget module, and without the extension" ./e2e 'BudgetTurn' 5x
run "budget: context_handoff with git metadata, 10k files and 5 worktrees, vs git status --porcelain=v2 alone" ./budget 'HandoffWrite' 5x
run "recap: select + serialize + redact a 50 MB run vs reading it once with session/" ./recap 'Prepare50MB' 5x
run "recap: redaction of 48 KB inputs built against naive scanners vs ordinary text" ./recap 'RedactAdversarial' 50x
run "rules: reading a chat line, a task paragraph and a 40-rule AGENTS.md (per message, per sentence) vs cutting them into sentences alone; 10,000 rules in one message" ./rules 'Classify|Extract10000' 1s
run "relay: note, cold recall (cold/floor) and warm recall (warm/scan: one substring search of the file in memory) on 10/100/500 MB sessions vs session/ read and grep -ci, peak memory (RELAY_BENCH_SIZES limits sizes)" ./relay 'BenchmarkRelay$' 1x
run "relay: /relay through real pi on a 150k-token session, command to the next turn's first request" ./e2e 'RelayThroughPi' 3x
