#!/usr/bin/env bash
# Fetches the linter's real-project corpus (tests/corpus/crates.txt) into DEST, one directory per
# crate (`DEST/<name>-<version>/`), as published on crates.io. Nothing is vendored in the
# repository: the sources come from the registry at the pinned versions, through cargo.
#
# Usage: bash tests/corpus/fetch.sh DEST
#
# `cargo info NAME@VERSION` downloads exactly that package into cargo's registry cache (and no
# dependency); the archive is checked against the pinned sha256 and unpacked. Crates already in
# DEST (with the marker file `.corpus-sha256` matching) are not fetched again.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dest=${1:?usage: bash tests/corpus/fetch.sh DEST}
mkdir -p "$dest"
# One fetch at a time into DEST (concurrent test binaries, a bench run).
exec 9>"$dest/.fetch-lock"
flock 9
cargo_home=${CARGO_HOME:-$HOME/.cargo}
# Outside any workspace, so that `cargo info` asks the registry instead of the local package.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

while read -r name version sha256 _rest; do
    case $name in '' | '#'*) continue ;; esac
    target="$dest/$name-$version"
    if [ -f "$target/.corpus-sha256" ] && [ "$(cat "$target/.corpus-sha256")" = "$sha256" ]; then
        continue
    fi
    archive=$(ls "$cargo_home"/registry/cache/*/"$name-$version.crate" 2>/dev/null | head -1 || true)
    if [ -z "$archive" ]; then
        (cd "$scratch" && cargo info --quiet "$name@$version" >/dev/null) || {
            echo "error: cargo could not fetch $name@$version from the registry" >&2
            exit 1
        }
        archive=$(ls "$cargo_home"/registry/cache/*/"$name-$version.crate" 2>/dev/null | head -1 || true)
    fi
    if [ -z "$archive" ]; then
        echo "error: $name-$version.crate is not in $cargo_home/registry/cache after \`cargo info\`" >&2
        exit 1
    fi
    actual=$(sha256sum "$archive" | cut -d' ' -f1)
    if [ "$actual" != "$sha256" ]; then
        echo "error: $archive has sha256 $actual, the corpus pins $sha256" >&2
        exit 1
    fi
    rm -rf "$target"
    tar -xzf "$archive" -C "$dest"
    echo "$sha256" > "$target/.corpus-sha256"
    echo "fetched $name $version"
done < "$here/crates.txt"
