#!/usr/bin/env bash
# Regenerate the session fixtures in session/testdata/ from real pi runs.
#
#   session/testdata/record/record.sh            # every scenario
#   session/testdata/record/record.sh branch     # just one
#
# For each scenarios/<name>.json it runs pi 1.6.0 (tools/node_modules) in RPC
# mode, offline and isolated, with faux.ts as the only model, and writes
#   testdata/<name>.jsonl           the session file pi wrote
#   testdata/<name>.requests.jsonl  every request the model received (faux.ts)
#   testdata/<name>.pi.json         pi's own branch/projection/token estimate for
#                                   every leaf, computed by oracle.mjs with pi's code
# and then derives v1.jsonl, v2.jsonl and damaged.jsonl (derive.mjs) and their
# oracles. Tests read only these checked-in files.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
testdata=$(dirname "$here")
root=$(cd "$testdata/../.." && pwd)
export PATH="$root/tools/node_modules/.bin:$PATH"
pi_pkg="$root/tools/node_modules/@earendil-works/pi-coding-agent"
if [[ "$(pi --version)" != "1.6.0" ]]; then
	echo "record.sh: need pi 1.6.0 in $root/tools/node_modules (make tools)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
	scenarios=(tools compaction retain-none context-edit branch)
fi

for name in "${scenarios[@]}"; do
	agent="$tmp/$name/agent"
	work="$tmp/$name/work"
	mkdir -p "$agent" "$work"
	# Thresholds never trigger on these small sessions; keep pi's own compaction out anyway.
	echo '{"compaction":{"enabled":false}}' >"$agent/settings.json"
	printf 'alpha\nbeta\ngamma\n' >"$work/notes.txt"
	seq 1 200 | sed 's/^/line /' >"$work/big.txt"
	log="$testdata/$name.requests.jsonl"
	rm -f "$log"
	session=$(cd "$work" && PI_CODING_AGENT_DIR="$agent" PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 \
		FAUX_SCENARIO="$here/scenarios/$name.json" FAUX_LOG="$log" \
		node "$here/drive.mjs" "$here/scenarios/$name.json" -- \
		pi -ne -nc -ns -np --no-mcp --tools read,bash -e "$here/faux.ts" --model faux/faux-1)
	cp "$session" "$testdata/$name.jsonl"
	echo "record.sh: $name: $(wc -l <"$testdata/$name.jsonl") lines, $(wc -l <"$log") requests"
done

# Derived fixtures: hand-migrated v1/v2 files and a damaged copy.
node "$here/derive.mjs" "$testdata"

for name in tools compaction retain-none context-edit branch v1 v2 damaged; do
	node "$here/oracle.mjs" "$pi_pkg" "$testdata/$name.jsonl" >"$testdata/$name.pi.json"
done

# The golden diagnostics of damaged.jsonl name its ids and offsets.
(cd "$root" && go test ./session/ -run '^TestDamagedDiagnostics$' -update >/dev/null)
echo "record.sh: fixtures written to $testdata"
