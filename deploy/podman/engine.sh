#!/usr/bin/env bash
# Makes podman this machine's container engine for `docker compose` and testcontainers, on Debian
# without a Docker engine: installs podman, Debian's docker-compose and debootstrap, serves
# podman's Docker-compatible API on /run/podman/podman.sock, and runs containers' health checks
# (health-checks.sh). Run as root; safe to run again. Both keep running in the background.
# Then: export DOCKER_HOST=unix:///run/podman/podman.sock
set -euo pipefail

packages=(podman docker-compose debootstrap golang-github-containernetworking-plugin-dnsname)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" || { apt-get update -q && apt-get install -y -q "${missing[@]}"; }
fi

# The sandbox cannot raise rlimits above these, and podman's defaults are above them. crun cannot
# run on this machine's hybrid cgroups; runc can.
conf=/etc/containers/containers.conf
if ! grep -q '^# bike-catalog' "$conf" 2>/dev/null; then
  mkdir -p /etc/containers
  [ -e "$conf" ] && cp "$conf" "$conf.before-bike-catalog"
  cat > "$conf" <<'CONF'
# bike-catalog: deploy/podman/engine.sh
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
CONF
fi

socket=/run/podman/podman.sock
if ! curl -sf --unix-socket "$socket" http://podman/_ping > /dev/null 2>&1; then
  mkdir -p /run/podman
  nohup podman system service --time=0 "unix://$socket" > /run/podman/service.log 2>&1 &
  for _ in $(seq 50); do
    curl -sf --unix-socket "$socket" http://podman/_ping > /dev/null 2>&1 && break
    sleep 0.2
  done
fi
curl -sf --unix-socket "$socket" http://podman/_ping > /dev/null
echo "podman answers on unix://$socket"

runner=/run/podman/health-checks.pid
if ! { [ -s "$runner" ] && kill -0 "$(cat "$runner")" 2> /dev/null; }; then
  nohup "$(dirname "$0")/health-checks.sh" > /dev/null 2>&1 &
  echo $! > "$runner"
fi
echo "podman's health checks run every 2 seconds (pid $(cat "$runner"))"
