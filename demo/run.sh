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
printf '# demo project\n\nA scratch directory for the pi-session demo.\n' > "$dir/project/README.md"

export PATH="$bin:$PATH" HOME="$dir/home" PI_CODING_AGENT_DIR="$dir/agent"
export PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0
export PI_SESSION_PI="$bin/pi"
export FAUX_FALLBACK=demo FAUX_PROVIDER=demo FAUX_MODEL=scripted FAUX_MODEL_NAME="Scripted demo model"
cd "$dir/project"
args=(-e "$root/testdata/pi/faux-model.ts" --model demo/scripted)

# Recaps: a second scripted model writes the "✦ Recap" card 30 s after a
# run settles (the shortest quiet delay); /recap shows and changes it.
recap_demo() {
  export FAUX_RECAP=good PI_SUMMARY_IDLE_MS=30000
  mkdir -p -m 700 "$dir/agent/summaries"
  printf '{"enabled": true, "provider": "faux-recap", "model": "recap-1", "reasoning": "low"}\n' > "$dir/agent/summaries/config.private.json"
  chmod 600 "$dir/agent/summaries/config.private.json"
}
recap_demo

if [ -t 0 ] && [ -t 1 ]; then
  cat <<TXT
pi-session demo: real pi 1.6 under pi-session, offline; the model is scripted.
  1. Type anything and press Enter: the scripted model answers.
  2. Type  show me the build log : pi's bash prints 1.6 MB; the offload engine keeps it
     out of the model's context behind a handle, and the model reads back only the
     ERROR lines with ctx_read. Then /ce status shows what that saved.
  3. Type  /handoff finish the demo : the budget engine asks the model for a
     context_handoff, writes it with the git state, and pi exits; pi-session
     relaunches a fresh pi in this terminal that continues from it.
  4. Ctrl+Z suspends pi and pi-session together (fg resumes); /quit leaves.
  5. Leave pi alone for 30 s after a run: a "✦ Recap" card written by the demo's
     recap model says what the run did and the next step (ctrl+o shows the model).
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
echo "handoff written: $(ls "$dir/project/.ai-work/handoffs" | grep '\.md$')"

# Recap cards are drawn in the TUI only; here, the request a recap of the
# build-log run would send to the recap model, secrets redacted.
session=$(grep -l 'show me the build log' "$dir"/agent/sessions/*/*.jsonl | head -1)
echo
echo "\$ pi-session engine recap <the build-log session>   # what a recap would send"
"$root/bin/pi-session" engine recap "$session" | sed -n '/^--- user message ---$/,$p' | cut -c1-160 | head -24
