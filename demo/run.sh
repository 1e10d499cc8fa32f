#!/usr/bin/env bash
# make demo: real pi 1.6 under pi-session, offline, with a scripted model.
# Everything pi writes goes to a throwaway directory (pi's temporary files
# too: TMPDIR points inside it), removed at the end; nothing touches ~/.pi.
#   KEEP=1 make demo                 keep the directory, and say how to resume
#   KEEP=1 DEMO_DIR=<dir> bash demo/run.sh --session <id>
#                                    resume a kept demo session (pi options after run.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/tools/node_modules/.bin"
[ -x "$bin/pi" ] || { echo "demo: run 'make tools' first" >&2; exit 1; }
ps_bin=${DEMO_PI_SESSION:-$root/bin/pi-session} # tests run the demo with the binary they built
[ -x "$ps_bin" ] || { echo "demo: run 'make build' first" >&2; exit 1; }

if [ -n "${DEMO_DIR:-}" ]; then
  [ -d "$DEMO_DIR/agent" ] && [ -d "$DEMO_DIR/project" ] || { echo "demo: DEMO_DIR=$DEMO_DIR is not a kept demo directory" >&2; exit 1; }
  dir=$(cd "$DEMO_DIR" && pwd)
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/pi-session-demo.XXXXXX")
fi
keep=${KEEP:-}
if [ -n "$keep" ]; then keep_note="kept at the end: KEEP=1"; else keep_note="removed at the end; KEEP=1 keeps them"; fi
cleanup() {
  if [ -n "$keep" ]; then
    echo "demo: the files of this run are kept in $dir"
  else
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
mkdir -p "$dir/agent" "$dir/home" "$dir/project" "$dir/tmp"
# pi keeps the last 2k tokens on a compaction (default 20k), so /relay has
# something to replace after a single long answer.
[ -e "$dir/agent/settings.json" ] || echo '{"compaction":{"keepRecentTokens":2000}}' > "$dir/agent/settings.json"
[ -e "$dir/project/README.md" ] || printf '# demo project\n\nA scratch directory for the pi-session demo.\n' > "$dir/project/README.md"

export PATH="$bin:$PATH" HOME="$dir/home" PI_CODING_AGENT_DIR="$dir/agent" TMPDIR="$dir/tmp"
export PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0
export PI_SESSION_PI="$bin/pi"
export FAUX_FALLBACK=demo FAUX_PROVIDER=demo FAUX_MODEL=scripted FAUX_MODEL_NAME="Scripted demo model"
cd "$dir/project"
args=(-e "$root/testdata/pi/faux-model.ts" --model demo/scripted "$@")

# The build log pi's bash prints: 20,000 lines with a few ERROR lines. Its
# size is measured here, for the banner and the scripted model.
build_log_demo() {
  export FAUX_DEMO_LOG_COMMAND="awk 'BEGIN{for(i=1;i<=20000;i++){printf \"build step %05d: compiling module_%d with -O2 -Wall ... ok\\n\", i, i%300; if(i%4999==0) printf \"build step %05d: ERROR linker: undefined reference to symbol_%d\\n\", i, i}}'"
  local n
  n=$(bash -c "$FAUX_DEMO_LOG_COMMAND" | wc -c)
  log_bytes=""
  while [ ${#n} -gt 3 ]; do log_bytes=",${n: -3}$log_bytes"; n=${n:0:${#n}-3}; done
  log_bytes="$n$log_bytes"
  export FAUX_DEMO_LOG_SIZE="$log_bytes-byte"
}
build_log_demo

# Recaps: a second scripted model writes the "✦ Recap" card 30 s after a
# run settles (the shortest quiet delay); /recap shows and changes it.
recap_demo() {
  export FAUX_RECAP=good PI_SUMMARY_IDLE_MS=30000
  mkdir -p -m 700 "$dir/agent/summaries"
  printf '{"enabled": true, "provider": "faux-recap", "model": "recap-1", "reasoning": "low"}\n' > "$dir/agent/summaries/config.private.json"
  chmod 600 "$dir/agent/summaries/config.private.json"
}
recap_demo

# resume_line says how to come back to the last session of this run: pi's
# own "pi --session <id>" works only with the demo's agent dir and model.
resume_line() {
  local last id
  last=$(ls -t "$dir"/agent/sessions/*/*.jsonl 2>/dev/null | head -1 || true)
  [ -n "$last" ] || return 0
  id=$(sed -n '1s/.*"id":"\([^"]*\)".*/\1/p' "$last")
  [ -n "$id" ] || return 0
  if [ -n "$keep" ]; then
    echo "demo: pi's 'pi --session' line works only inside the demo; to resume this session, run:"
    echo "  KEEP=1 DEMO_DIR=$dir bash $root/demo/run.sh --session $id"
  else
    echo "demo: this run's files are removed now, so its session cannot be resumed (KEEP=1 make demo keeps them)"
  fi
}

# wrap fits text to $width columns at spaces and never cuts a word: a word
# longer than the width (a path) gets a line of its own. Continued lines
# keep the line's indentation, and a list item's ("  3. ", "  [notice] ").
width=${COLUMNS:-80}
wrap() {
  LC_ALL=C awk -v w="$width" '
    function len(s, t, n) { t = s; n = gsub(/[\200-\277]/, "", t); return length(s) - n } # characters of UTF-8
    {
      if (len($0) <= w) { print; next }
      match($0, /^ *([0-9]+\. |\[[a-z ]+\] )?/)
      first = substr($0, 1, RLENGTH); rest = substr($0, RLENGTH + 1)
      match(first, /^ */); lead = substr(first, 1, RLENGTH)
      indent = sprintf("%" len(first) "s", "")
      if (len(indent) * 2 > w) indent = lead
      n = split(rest, word, / /); out = first; empty = 1
      for (i = 1; i <= n; i++) {
        if (empty) { if (word[i] == "") continue; out = out word[i]; empty = 0; continue }
        if (len(out) + 1 + len(word[i]) > w) { sub(/ +$/, "", out); print out; out = indent; empty = 1; i--; continue }
        out = out " " word[i]
      }
      sub(/ +$/, "", out); if (!empty) print out
    }'
}

if [ -t 0 ] && [ -t 1 ]; then
  width=$(tput cols 2>/dev/null || true) # the terminal's width, 20 to 100
  case $width in '' | *[!0-9]*) width=80 ;; esac
  [ "$width" -le 100 ] || width=100
  [ "$width" -ge 20 ] || width=20
  wrap <<TXT
pi-session demo: real pi 1.6 under pi-session, offline; the model is scripted.
  1. Type anything and press Enter: the scripted model answers.
  2. Type  show me the build log : pi's bash prints a build log of $log_bytes bytes; the offload engine keeps it out of the model's context behind a handle, and the model reads back only the ERROR lines with ctx_read. Then /ce status shows what that saved.
  3. Type  /handoff finish the demo : the budget engine asks the model for a context_handoff, writes it with the git state, and pi exits; pi-session relaunches a fresh pi in this terminal that continues from it.
  4. Ctrl+Z stops pi, pi-session and this script (fg resumes); /quit leaves.
  5. Leave pi alone for 30 s after a run: a "✦ Recap" card written by the demo's recap model says what the run did and the next step (ctrl+o shows the model).
  6. Type  fill the session  (a long report), then anything else, then  /relay : the conversation becomes a handoff note plus the latest exchange, written without a model call. Ask  what did the report find?  : the model fetches it back with recall.
Files of this run: $dir
($keep_note). Press Enter to start.
TXT
  read -r _
  status=0
  "$ps_bin" "${args[@]}" || status=$?
  resume_line | wrap
  exit "$status"
fi

# Not at a terminal (CI, a pipe): the same story in print mode, fitted to
# 80 columns (COLUMNS=... for another width).
{
echo "pi-session demo (print mode; run 'make demo' in a terminal for the TUI)"
echo "build log for pi's bash: $log_bytes bytes"
echo
echo "\$ pi-session --model demo/scripted -p 'show me the build log'"
"$ps_bin" "${args[@]}" -p "show me the build log"
echo
echo "\$ pi-session --model demo/scripted -p '/ce status --all'"
"$ps_bin" "${args[@]}" -p "/ce status --all" 2>&1
echo
echo "\$ pi-session --model demo/scripted -p '/handoff finish the demo'"
"$ps_bin" "${args[@]}" -p "/handoff finish the demo"
echo
echo "handoff written: $(ls "$dir/project/.ai-work/handoffs" | grep '\.md$')"

# Recap cards are drawn in the TUI only; here, the request a recap of the
# build-log run would send to the recap model, secrets redacted.
session=$(grep -l 'show me the build log' "$dir"/agent/sessions/*/*.jsonl | head -1)
echo
echo "\$ pi-session engine recap <the build-log session>   # what a recap would send"
"$ps_bin" engine recap "$session" | sed -n '/^--- user message ---$/,$p' | awk 'NR <= 24' # reads it all: no SIGPIPE under pipefail

# The relay scene: /relay exists in interactive and RPC sessions only, so
# outside a terminal it runs in RPC mode.
echo
echo "\$ pi-session --mode rpc   (relay: a long session, /relay, recall)"
node "$root/demo/relay-rpc.mjs" "$ps_bin" "${args[@]}" -- \
  "fill the session with the profiling report" "thanks; now check the tests" "/relay" "what did the report find?"
echo
echo "relay notes written: $(ls "$dir/agent/context-relay"/*/ 2>/dev/null | tr '\n' ' ')"
} 2>&1 | wrap
