#!/usr/bin/env bash
# Record the relay engine's session fixtures from real pi 1.6.0 runs.
#
#   relay/testdata/record/record.sh          # every scenario
#   relay/testdata/record/record.sh long     # just one
#
# Each scenarios/<name>.json is driven through pi in RPC mode, offline and
# isolated, by the session package's recorder (session/testdata/record:
# drive.mjs and its scripted model faux.ts), with pi-session's extension
# loaded (so /relay runs for real) and pi-session serve as its engine. The
# session file pi wrote becomes testdata/<name>.jsonl. Then the golden
# notes are regenerated (go test ./relay -run Golden -update).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
testdata=$(dirname "$here")
root=$(cd "$testdata/../.." && pwd)
rec="$root/session/testdata/record"
export PATH="$root/tools/node_modules/.bin:$PATH"
if [[ "$(pi --version)" != "1.6.0" ]]; then
	echo "record.sh: need pi 1.6.0 in $root/tools/node_modules (make tools)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/pi-session" ./cmd/pi-session)

scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
	scenarios=(short long relayed branch rules)
fi

for name in "${scenarios[@]}"; do
	agent="$tmp/$name/agent"
	work="$tmp/$name/work"
	mkdir -p "$agent" "$work"
	# pi's own compaction only when asked (/compact), and of anything.
	echo '{"compaction":{"enabled":false,"keepRecentTokens":1}}' >"$agent/settings.json"
	printf 'alpha\nbeta\ngamma\n' >"$work/notes.txt"
	session=$(cd "$work" && PI_CODING_AGENT_DIR="$agent" PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 \
		PI_SESSION_BIN="$tmp/pi-session" FAUX_SCENARIO="$here/scenarios/$name.json" FAUX_LOG="$tmp/$name/requests.jsonl" \
		node "$rec/drive.mjs" "$here/scenarios/$name.json" -- \
		pi -ne -nc -ns -np --no-mcp --tools read,bash,edit,write -e "$rec/faux.ts" -e "$root/extension" --model faux/faux-1)
	cp "$session" "$testdata/$name.jsonl"
	echo "record.sh: $name: $(wc -l <"$testdata/$name.jsonl") lines"
done

(cd "$root" && go test ./relay/ -run 'Golden' -update >/dev/null)
echo "record.sh: fixtures and golden notes written to $testdata"
