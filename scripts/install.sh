#!/usr/bin/env bash
# make install: copy the built pi-session into PREFIX/bin and say what the
# shell will make of it: when that directory is not on PATH, the line to
# add; when another pi-session comes first on PATH, which one runs.
# Usage: scripts/install.sh BINARY PREFIX
set -euo pipefail
bin=$1
dir=${2%/}/bin
install -d "$dir"
install -m 0755 "$bin" "$dir/pi-session"
echo "make install: installed $dir/pi-session"

real() { (cd "$1" 2>/dev/null && pwd -P) || true; }
want=$(real "$dir")
on=
IFS=: read -r -a entries <<<"${PATH:-}"
for p in "${entries[@]}"; do
  if [ -n "$p" ] && [ "$(real "$p")" = "$want" ]; then
    on=yes
    break
  fi
done

shell=$(basename "${SHELL:-bash}")
if [ -z "$on" ]; then
  case $shell in
    zsh) rc='~/.zshrc'; line="export PATH=\"$dir:\$PATH\"" ;;
    fish) rc='~/.config/fish/config.fish'; line="fish_add_path $dir" ;;
    *) rc='~/.bashrc'; line="export PATH=\"$dir:\$PATH\"" ;;
  esac
  echo "make install: $dir is not on your PATH, so your shell will not find pi-session; add this line to $rc and open a new terminal:"
  echo "  $line"
else
  found=$(command -v pi-session || true)
  if [ -n "$found" ] && [ "$(real "$(dirname "$found")")" != "$want" ]; then
    echo "make install: $found comes before $dir on your PATH, so your shell runs that one; remove it or put $dir first"
  fi
fi
echo "make install: to run pi under pi-session, add to your shell's startup file: alias pi=pi-session"
