#!/usr/bin/env bash
# make demo: real pi 1.6 under pi-session, offline, with a scripted model.
# Everything pi writes goes to a throwaway directory; nothing touches ~/.pi.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/tools/node_modules/.bin"
[ -x "$bin/pi" ] || { echo "demo: run 'make tools' first" >&2; exit 1; }
[ -x "$root/bin/pi-session" ] || { echo "demo: run 'make build' first" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/pi-session-demo.XXXXXX")
mkdir -p "$dir/agent" "$dir/home" "$dir/project"
# pi keeps the last 2k tokens on a compaction (default 20k), so /relay has
# something to replace after a single long answer.
echo '{"compaction":{"keepRecentTokens":2000}}' > "$dir/agent/settings.json"
printf '# demo project\n\nA scratch directory for the pi-session demo.\n' > "$dir/project/README.md"

export PATH="$bin:$PATH" HOME="$dir/home" PI_CODING_AGENT_DIR="$dir/agent"
export PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0
export PI_SESSION_PI="$bin/pi"
export FAUX_FALLBACK=demo FAUX_PROVIDER=demo FAUX_MODEL=scripted FAUX_MODEL_NAME="Scripted demo model"
cd "$dir/project"
args=(-e "$root/testdata/pi/faux-model.ts" -e "$root/demo/handoff.ts" --model demo/scripted)

if [ -t 0 ] && [ -t 1 ]; then
  cat <<TXT
pi-session demo: real pi 1.6 under pi-session, offline; the model is scripted.
  1. Type anything and press Enter: the scripted model answers.
  2. Type  show me the build log : pi's bash prints 1.6 MB; the offload engine keeps it
     out of the model's context behind a handle, and the model reads back only the
     ERROR lines with ctx_read. Then /ce status shows what that saved.
  3. Type  /handoff finish the demo : pi writes a handoff and exits; pi-session
     relaunches a fresh pi in this terminal that continues from it.
  4. Type  fill the session  (a long report), then anything else, then  /relay : the
     conversation becomes a deterministic handoff note plus the latest exchange, without a
     model call. Ask  what did the report find?  : the model fetches it back with recall.
  5. Ctrl+Z suspends pi and pi-session together (fg resumes); /quit leaves.
Files of this run: $dir
Press Enter to start.
TXT
  read -r _
  exec "$root/bin/pi-session" "${args[@]}"
fi

# Not at a terminal (CI, a pipe): the same story in print mode.
echo "pi-session demo (print mode; run 'make demo' in a terminal for the TUI)"
echo
echo "\$ pi-session --model demo/scripted -p 'show me the build log'"
"$root/bin/pi-session" "${args[@]}" -p "show me the build log"
echo
echo "\$ pi-session --model demo/scripted -p '/ce status --all'"
"$root/bin/pi-session" "${args[@]}" -p "/ce status --all" 2>&1
echo
echo "\$ pi-session --model demo/scripted -p '/handoff finish the demo'"
"$root/bin/pi-session" "${args[@]}" -p "/handoff finish the demo"
echo
echo "handoff notes written: $(ls "$dir/project/.ai-work/handoffs")"

# The relay scene: /relay exists in interactive and RPC sessions only, so
# outside a terminal it runs in RPC mode.
echo
echo "\$ pi-session --mode rpc   (relay: a long session, /relay, recall)"
node "$root/demo/relay-rpc.mjs" "$root/bin/pi-session" "${args[@]}" -- \
  "fill the session with the profiling report" "thanks; now check the tests" "/relay" "what did the report find?"
echo
echo "relay notes written: $(ls "$dir/agent/context-relay"/*/ 2>/dev/null | tr '\n' ' ')"
