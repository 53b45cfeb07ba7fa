#!/usr/bin/env bash
# Installs the pinned code-server (a real VS Code in the browser) for the end-to-end tests.
#
# code-server's own postinstall downloads a ripgrep binary from the internet, which fails on
# machines that only reach package registries, so it is installed with --ignore-scripts and the
# postinstall steps are done here: native modules rebuilt against the local Node, the system `rg`
# linked in, and the symlinks the postinstall would make.
#
# Usage: tools/code-server/install.sh [DEST]   (default DEST: <repo>/.tools/code-server)
# Idempotent: a stamp holding a hash of the lock file and this script skips a finished install.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dest="${1:-$repo/.tools/code-server}"
stamp="$dest/.installed"
want="$(cat "$here/package-lock.json" "$here/install.sh" | sha256sum | cut -d' ' -f1)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dest/node_modules/.bin/code-server" ]; then
  exit 0
fi

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" != 20 ]; then
  echo "code-server 4.100.3 needs Node 20 (found $(node --version)); install Node 20 and retry." >&2
  exit 1
fi
rg_bin="$(command -v rg || true)"
if [ -z "$rg_bin" ]; then
  echo "ripgrep (rg) is missing; run 'make system-deps' (Debian package ripgrep) and retry." >&2
  exit 1
fi

echo "installing code-server into $dest"
rm -f "$stamp"
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"

# node-pty's rebuild runs `npx node-gyp`, which must not stop to ask.
export npm_config_yes=true
npm_quiet=(--no-audit --no-fund --loglevel=error)

cd "$dest"
npm ci --ignore-scripts "${npm_quiet[@]}"
npm rebuild argon2 "${npm_quiet[@]}"

cd "$dest/node_modules/code-server/lib/vscode"
# lib/vscode ships an npm-shrinkwrap.json that pins its tree; `npm ci` rejects it under npm 11
# (one transitive entry is missing), so `npm install` fills that gap and keeps the other pins.
npm install --omit=dev --ignore-scripts "${npm_quiet[@]}"
npm rebuild node-pty @vscode/spdlog @parcel/watcher kerberos native-watchdog @vscode/deviceid \
  "${npm_quiet[@]}"
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sfn "$rg_bin" node_modules/@vscode/ripgrep/bin/rg
ln -sfn node_modules node_modules.asar
ln -sfn code-linux.sh bin/remote-cli/code-server
ln -sfn browser-linux.sh bin/helpers/browser.sh

cd extensions
npm install --omit=dev --ignore-scripts "${npm_quiet[@]}"

echo "$want" > "$stamp"
echo "code-server installed: $dest/node_modules/.bin/code-server"
