#!/usr/bin/env bash
# Fetches the TypeScript/JavaScript real-project corpus (tests/corpus/typescript/packages.txt)
# into DEST, one directory per package (`DEST/<scope>-<name>-<version>/`, the name of npm's
# tarball), as published on npm. Nothing is vendored in the repository: the tarballs come from
# the registry at the pinned versions, through `npm pack`, and are checked against the pinned
# integrity (sha512). Packages already in DEST (marker `.corpus-integrity` matching) are not
# fetched again.
#
# Usage: bash tests/corpus/typescript/fetch.sh DEST
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dest=${1:?usage: bash tests/corpus/typescript/fetch.sh DEST}
mkdir -p "$dest"
# One fetch at a time into DEST (concurrent test binaries, a bench run).
exec 9>"$dest/.fetch-lock"
flock 9
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

while read -r name version integrity _rest; do
    case $name in '' | '#'*) continue ;; esac
    tarball="$(echo "${name#@}" | tr '/' '-')-$version.tgz"
    target="$dest/${tarball%.tgz}"
    if [ -f "$target/.corpus-integrity" ] && [ "$(cat "$target/.corpus-integrity")" = "$integrity" ]; then
        continue
    fi
    (cd "$scratch" && npm pack --silent "$name@$version" >/dev/null) || {
        echo "error: npm could not fetch $name@$version from the registry" >&2
        exit 1
    }
    actual="sha512-$(openssl dgst -sha512 -binary "$scratch/$tarball" | base64 -w0)"
    if [ "$actual" != "$integrity" ]; then
        echo "error: $tarball has integrity $actual, the corpus pins $integrity" >&2
        exit 1
    fi
    rm -rf "$target"
    mkdir -p "$target"
    tar -xzf "$scratch/$tarball" -C "$target" --strip-components=1
    rm "$scratch/$tarball"
    echo "$integrity" > "$target/.corpus-integrity"
    echo "fetched $name $version"
done < "$here/packages.txt"
