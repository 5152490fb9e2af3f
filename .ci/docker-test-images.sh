#!/usr/bin/env bash
# Builds the docker executor's test images locally, with no registry: each is a `docker import` of a
# rootfs made from Debian's busybox-static. Idempotent: an image that exists is left alone.
#   ci-runner-test/sh:1        busybox applets, /bin/sh only (no bash)
#   ci-runner-test/bash:1      the same plus the host's bash and the libraries it links
#   ci-runner-test/httpd:1     a service: busybox httpd on port 80 (EXPOSE 80)
#   ci-runner-test/nolisten:1  a service that exposes 5432 and never listens
#   ci-runner-test/user:1      sh:1 with `USER 1000:1000` (a passwd entry `builder`), as many node/python images
#   ci-runner-test/entry:1     sh:1 with an ENTRYPOINT wrapper script ending in `exec "$@"`
#   ci-runner-test/binentry:1  sh:1 as uid 1000 with a plain binary as ENTRYPOINT (`/bin/echo`)
set -euo pipefail
DOCKER=${DOCKER:-docker}
BUSYBOX=${BUSYBOX:-/bin/busybox}
TAG=1

exists() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

need=()
for name in sh bash httpd nolisten user entry binentry; do exists "ci-runner-test/$name:$TAG" || need+=("$name"); done
[ "${#need[@]}" -eq 0 ] && exit 0

if [ ! -x "$BUSYBOX" ] || ! "$BUSYBOX" --list >/dev/null 2>&1; then
  echo "docker-test-images: $BUSYBOX is not a static busybox (apt-get install busybox-static)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# base rootfs: busybox with every applet as a symlink
base="$work/base"
mkdir -p "$base"/{bin,sbin,usr/bin,usr/sbin,tmp,etc,root,www,builds}
chmod 1777 "$base/tmp"
cp "$BUSYBOX" "$base/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ -e "$base/bin/$applet" ] || ln -s busybox "$base/bin/$applet"
done
rm -f "$base/bin/bash"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$base/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$base/etc/group"
echo 'hello from the service' >"$base/www/index.html"
# user, binentry: uid 1000 has a home of its own, as in images that add a user
printf 'builder:x:1000:1000:builder:/home/builder:/bin/sh\n' >>"$base/etc/passwd"
printf 'builder:x:1000:\n' >>"$base/etc/group"
mkdir -p "$base/home/builder"
chown 1000:1000 "$base/home/builder"
# entry: says it ran and exports a variable, then runs what it was given
printf '#!/bin/sh\necho "entrypoint: wrapping $1"\nexport FROM_ENTRYPOINT=yes\nexec "$@"\n' >"$base/entrypoint.sh"
chmod 755 "$base/entrypoint.sh"

import() { # name rootfs changes...
  local name=$1 root=$2
  shift 2
  tar -C "$root" -c . | "$DOCKER" import "$@" - "ci-runner-test/$name:$TAG" >/dev/null
  echo "docker-test-images: built ci-runner-test/$name:$TAG"
}

for name in "${need[@]}"; do
  case "$name" in
    sh) import sh "$base" --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' ;;
    bash)
      root="$work/bash"
      cp -a "$base" "$root"
      cp "$(command -v bash)" "$root/bin/bash"
      for lib in $(ldd "$(command -v bash)" | grep -o '/[^ ]*'); do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
      done
      import bash "$root" --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin'
      ;;
    httpd) import httpd "$base" --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' --change 'EXPOSE 80' --change 'CMD ["httpd", "-f", "-p", "80", "-h", "/www"]' ;;
    user) import user "$base" --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' --change 'USER 1000:1000' ;;
    entry) import entry "$base" --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' --change 'ENTRYPOINT ["/entrypoint.sh"]' ;;
    binentry) import binentry "$base" --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' --change 'USER 1000' --change 'ENTRYPOINT ["/bin/echo"]' ;;
    nolisten) import nolisten "$base" --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' --change 'EXPOSE 5432' --change 'CMD ["sh", "-c", "echo service starting but never listening; exec sleep 100000"]' ;;
  esac
done
