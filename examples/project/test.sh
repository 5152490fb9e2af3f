#!/usr/bin/env bash
# Checks the build's artifact: it must exist (downloaded from the build job) and carry the greeting.
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f dist/app.txt ] || fail "dist/app.txt is missing: did the build job's artifacts arrive?"
grep -q "world!" dist/app.txt || fail "dist/app.txt has no greeting"
grep -q "^app=" dist/build-info.txt || fail "dist/build-info.txt has no app name"
if grep -q '\${' dist/app.txt; then fail "dist/app.txt still has placeholders"; fi

echo "ok - dist/app.txt exists"
echo "ok - greeting rendered: $(head -n 1 dist/app.txt)"
echo "ok - no placeholders left"
