#!/usr/bin/env bash
# Fetches the Python front-end's real-project corpus (tests/corpus/python-packages.txt) into
# DEST, one directory per package (`DEST/<distribution>-<version>/`), as published on PyPI.
# Nothing is vendored in the repository: the sources come from the registry at the pinned
# versions, through pip.
#
# Usage: bash tests/corpus/fetch-python.sh DEST
#
# `pip download --no-deps --only-binary :all:` fetches exactly that wheel (no build, no
# dependency); it is checked against the pinned sha256 and unpacked without its `.dist-info`.
# Packages already in DEST (with the marker file `.corpus-sha256` matching) are not fetched again.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dest=${1:?usage: bash tests/corpus/fetch-python.sh DEST}
mkdir -p "$dest/.wheels"
exec 9>"$dest/.fetch-lock"
flock 9

while read -r name version sha256 _rest; do
    case $name in '' | '#'*) continue ;; esac
    target="$dest/$name-$version"
    if [ -f "$target/.corpus-sha256" ] && [ "$(cat "$target/.corpus-sha256")" = "$sha256" ]; then
        continue
    fi
    wheel="$dest/.wheels/$name-$version-py3-none-any.whl"
    if [ ! -f "$wheel" ]; then
        python3 -m pip download --quiet --no-deps --only-binary :all: --dest "$dest/.wheels" \
            "$name==$version" || {
            echo "error: pip could not fetch $name==$version from the registry" >&2
            exit 1
        }
    fi
    actual=$(sha256sum "$wheel" | cut -d' ' -f1)
    if [ "$actual" != "$sha256" ]; then
        echo "error: $wheel has sha256 $actual, the corpus pins $sha256" >&2
        exit 1
    fi
    rm -rf "$target"
    mkdir -p "$target"
    python3 - "$wheel" "$target" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    members = [m for m in wheel.namelist() if ".dist-info/" not in m]
    wheel.extractall(sys.argv[2], members)
PY
    echo "$sha256" > "$target/.corpus-sha256"
    echo "fetched $name $version"
done < "$here/python-packages.txt"
