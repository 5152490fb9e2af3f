#!/usr/bin/env bash
# Packages the build's artifact into release/ with a checksum.
set -euo pipefail

[ -f dist/app.txt ] || { echo "dist/app.txt is missing: package needs the build job's artifacts" >&2; exit 1; }
name="${APP_NAME:-hello}-${CI_BUILD_REF_NAME:-local}"
mkdir -p release
cat dist/app.txt dist/build-info.txt > "release/$name.txt"
(cd release && sha256sum "$name.txt" > "$name.txt.sha256")
echo "packaged release/$name.txt"
cat "release/$name.txt.sha256"
