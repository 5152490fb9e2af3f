#!/usr/bin/env bash
# Renders the app into dist/. The job's variables (GREETING, APP_NAME) shape the output.
set -euo pipefail

app="${APP_NAME:-hello}"
commit="${CI_BUILD_REF:-local}"
mkdir -p dist .cache

# The cache keeps this counter between pipelines of the same branch.
count=$(( $(cat .cache/build-count 2>/dev/null || echo 0) + 1 ))
echo "$count" > .cache/build-count

while IFS= read -r line; do
  line="${line//'${GREETING}'/"${GREETING:-Hello}"}"
  line="${line//'${COMMIT}'/"${commit:0:8}"}"
  line="${line//'${REF}'/"${CI_BUILD_REF_NAME:-local}"}"
  printf '%s\n' "$line"
done < src/greeting.txt > "dist/app.txt"
printf 'app=%s\nbuild=%s\n' "$app" "$count" > dist/build-info.txt

echo "built dist/app.txt (build number $count):"
cat dist/app.txt
