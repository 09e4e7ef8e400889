#!/usr/bin/env bash
# The project's test command (README): vet, lint, then every test against
# real Redis, SQLite, MariaDB and Chromium. It expects those services to be
# reachable (see .ci/run, which installs and starts them).
set -euo pipefail
cd "$(dirname "$0")/.."

export BATON_TEST_REDIS="${BATON_TEST_REDIS:-redis://127.0.0.1:6379/0}"
export BATON_TEST_MYSQL="${BATON_TEST_MYSQL:-root@tcp(127.0.0.1:3306)/}"

echo "== gofmt"
unformatted="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
echo "== go test"
go test -count=1 -timeout 40m -p 2 ./... "$@"
