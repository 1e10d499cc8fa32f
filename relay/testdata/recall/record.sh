#!/usr/bin/env bash
# Record the recall evaluation sessions from real pi 1.6.0 runs.
#
#   relay/testdata/recall/record.sh          # every scenario
#   relay/testdata/recall/record.sh gotest   # just one
#
# Each scenarios/<name>.json is driven through pi in RPC mode, offline and
# isolated, by the session package's recorder (session/testdata/record:
# drive.mjs and its scripted model faux.ts), with pi-session's extension
# loaded (so the closing /relay runs for real). The model's words are
# scripted; its tool calls run for real in a work directory that
# scenarios/<name>.setup.sh prepares (a Go module, a git clone of this
# repository, a C or Python project), so every tool result is the output
# of a real program on this machine. The session file pi wrote becomes
# sessions/<name>.jsonl; queries.tsv labels what recall must find there.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
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
	for f in "$here"/scenarios/*.json; do
		scenarios+=("$(basename "$f" .json)")
	done
fi

# Commits made while recording have fixed authors and dates.
export GIT_AUTHOR_NAME="Dana Developer" GIT_AUTHOR_EMAIL="dana@example.com" GIT_AUTHOR_DATE="2026-11-30T09:00:00Z"
export GIT_COMMITTER_NAME="Dana Developer" GIT_COMMITTER_EMAIL="dana@example.com" GIT_COMMITTER_DATE="2026-11-30T09:00:00Z"
mkdir -p "$here/sessions"
for name in "${scenarios[@]}"; do
	agent="$tmp/$name/agent"
	work="$tmp/$name/work"
	mkdir -p "$agent" "$work"
	echo '{"compaction":{"enabled":false,"keepRecentTokens":1}}' >"$agent/settings.json"
	if [[ -f "$here/scenarios/$name.setup.sh" ]]; then
		(cd "$work" && ROOT="$root" bash "$here/scenarios/$name.setup.sh")
	fi
	session=$(cd "$work" && PI_CODING_AGENT_DIR="$agent" PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 \
		PI_SESSION_BIN="$tmp/pi-session" FAUX_SCENARIO="$here/scenarios/$name.json" FAUX_LOG="$tmp/$name/requests.jsonl" \
		node "$rec/drive.mjs" "$here/scenarios/$name.json" -- \
		pi -ne -nc -ns -np --no-mcp --tools read,bash,edit,write -e "$rec/faux.ts" -e "$root/extension" --model faux/faux-1)
	cp "$session" "$here/sessions/$name.jsonl"
	echo "record.sh: $name: $(wc -l <"$here/sessions/$name.jsonl") lines, $(wc -c <"$here/sessions/$name.jsonl") bytes"
done
