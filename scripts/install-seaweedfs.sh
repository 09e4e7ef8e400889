#!/usr/bin/env bash
# Builds SeaweedFS's weed (Apache-2.0), the real S3-compatible server the
# S3 artifact store's tests run against (package artifact/s3test), at a
# pinned version into ${BATON_TOOLS:-$HOME/.cache/baton-tools}/weed-<version>,
# unless it is there already, and prints the binary's path on stdout:
#
#   export BATON_WEED="$(scripts/install-seaweedfs.sh)"
#
# weed's go.mod has replace directives, so `go install module@version`
# refuses it; it is built as the main module from a copy of the module
# source, fetched through the Go module proxy. A cold build takes several
# minutes on two cores.
set -euo pipefail

# Keep in step with s3test.Version (artifact/s3test/weed.go).
version=v0.0.0-20261109003541-7506e5f91cd6
dest="${BATON_TOOLS:-$HOME/.cache/baton-tools}/weed-$version"
bin="$dest/weed"

if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dest"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
start=$(date +%s)
echo "== building SeaweedFS weed $version into $dest" >&2
src="$(cd "$work" && go mod download -json "github.com/seaweedfs/seaweedfs@$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$src" ] || [ ! -d "$src" ]; then
  echo "install-seaweedfs: could not download github.com/seaweedfs/seaweedfs@$version" >&2
  exit 1
fi
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
(cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$work/weed" ./weed) >&2
mv "$work/weed" "$bin"
echo "== built $bin in $(( $(date +%s) - start ))s" >&2
echo "$bin"
