#!/usr/bin/env bash
# Builds a local stand-in for the official Node base image the Dockerfile starts from
# (node:20-bookworm-slim), for machines that cannot pull it: a Debian bookworm minbase rootfs from
# debootstrap plus this machine's node and npm, laid out as the official image does (/usr/local/bin/node,
# /usr/local/lib/node_modules/npm, user `node` 1000), `docker import`ed under the official name.
#
# Only the stand-in carries what this machine needs to reach the npm registry and the Debian mirror
# from inside a build, never the Dockerfile:
#   - the CA bundle this machine trusts, as NODE_EXTRA_CA_CERTS (npm ci over TLS),
#   - npm's registry (`npm config get registry`), as npm_config_registry,
#   - this machine's Debian sources and its Acquire:: settings for validity checks and proxies
#     (a snapshot mirror's Release files are past their Valid-Until).
#
# Cached by content: the image carries CI_RUNNER_STANDIN=<hash of this script and its inputs> and is
# rebuilt only when that changes. An image of that name without the marker is a real pulled base: it is
# left alone and used as is.
#   STANDIN_IMAGE  (default node:20-bookworm-slim)   STANDIN_CA  (default /etc/ssl/certs/ca-certificates.crt)
set -euo pipefail
DOCKER=${DOCKER:-docker}
IMAGE=${STANDIN_IMAGE:-node:20-bookworm-slim}
CA=${STANDIN_CA:-/etc/ssl/certs/ca-certificates.crt}
SUITE=bookworm

say() { echo "node-base-standin: $*" >&2; }
die() { say "$*"; exit 1; }

node_bin=$(command -v node) || die "no node on PATH"
npm_dir=$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd) || die "no npm on PATH"
[ -f "$npm_dir/package.json" ] || die "cannot find npm's package directory (looked at $npm_dir)"
[ -f "$CA" ] || die "no CA bundle at $CA"
command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
node_version=$("$node_bin" --version)
case "$node_version" in v20.*) ;; *) die "node is $node_version; the base image is Node 20" ;; esac
npm_version=$("$node_bin" "$npm_dir/bin/npm-cli.js" --version)
registry=$("$node_bin" "$npm_dir/bin/npm-cli.js" config get registry 2>/dev/null)

# This machine's Debian sources: deb822 files first, else the one-line list; its mirror for debootstrap.
sources=$(cat /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$sources" ] || sources=$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null || true)
mirror=$(printf '%s\n' "$sources" | sed -n -E 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+'"$SUITE"'[[:space:]].*/\2/p' | grep -v security | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}
acquire=$(apt-config dump 2>/dev/null | grep -E '^Acquire::(Check-Valid-Until|Check-Date|https?::Proxy)' || true)

hash=$({
  cat "$0"
  echo "$IMAGE $node_version $npm_version $registry $mirror"
  sha256sum "$node_bin" "$CA" | cut -d' ' -f1
  printf '%s\n%s\n' "$sources" "$acquire"
} | sha256sum | cut -c1-16)

current=$("$DOCKER" image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE" 2>/dev/null | sed -n 's/^CI_RUNNER_STANDIN=//p' || true)
if "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1 && [ -z "$current" ]; then
  say "$IMAGE exists and is not a stand-in: using it as is"
  exit 0
fi
[ "$current" = "$hash" ] && exit 0
previous=$("$DOCKER" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
say "building $IMAGE ($SUITE from $mirror, node $node_version, npm $npm_version)"
if ! debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  die "debootstrap failed"
fi

# As Debian's slim images: no package caches, lists, docs or man pages, now or after later installs.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' 'path-exclude /usr/share/man/*' \
  'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' >"$root/etc/dpkg/dpkg.cfg.d/slim"
printf '%s\n' 'Dir::Cache::pkgcache "";' 'Dir::Cache::srcpkgcache "";' \
  'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb || true"; };' >"$root/etc/apt/apt.conf.d/slim"

# This machine's way to the Debian mirror.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
  rm -f "$root/etc/apt/sources.list"
fi
[ -z "$acquire" ] || printf '%s\n' "$acquire" >"$root/etc/apt/apt.conf.d/99standin-host"

# Node and npm where the official image has them.
install -D -m 755 "$node_bin" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
install -D -m 644 "$CA" "$root/usr/local/share/ci-runner-standin/ca-certificates.crt"
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

tar -C "$root" --numeric-owner -c . | "$DOCKER" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${node_version#v}" \
  --change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ci-runner-standin/ca-certificates.crt' \
  --change "ENV npm_config_registry=$registry" \
  --change "ENV CI_RUNNER_STANDIN=$hash" \
  --change 'CMD ["node"]' \
  - "$IMAGE" >/dev/null
[ -z "$previous" ] || "$DOCKER" image rm "$previous" >/dev/null 2>&1 || true # an outdated stand-in
say "built $IMAGE (stand-in $hash)"
