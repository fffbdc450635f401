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
runner=/run/podman/health-checks.pid
mkdir -p /run/podman

# The engine's two background processes run from /, holding nothing of the clone that started
# them: a clone deleted later (a CI checkout, a mktemp -d) must not take the engine with it (conmon
# cannot start a container from a deleted working directory; the API answers "write child: broken
# pipe"). One left by an earlier run in a directory that is gone is stopped and started again.
outside_root() { [ "$(readlink "/proc/$1/cwd" 2> /dev/null)" != / ]; }
# Running, not a zombie no one has reaped (where nothing reaps orphans, a stopped one stays one).
running() { [ -n "$1" ] && ps -o stat= -p "$1" 2> /dev/null | grep -qv Z; }
for pid in $(pgrep -f "podman system service --time=0 unix://$socket" || true); do
  if outside_root "$pid"; then
    kill "$pid"
    while running "$pid"; do sleep 0.1; done
  fi
done
if [ -s "$runner" ] && running "$(cat "$runner")" && outside_root "$(cat "$runner")"; then
  kill "$(cat "$runner")"
fi

if ! curl -sf --unix-socket "$socket" http://podman/_ping > /dev/null 2>&1; then
  (cd / && { nohup podman system service --time=0 "unix://$socket" > /run/podman/service.log 2>&1 & })
  for _ in $(seq 50); do
    curl -sf --unix-socket "$socket" http://podman/_ping > /dev/null 2>&1 && break
    sleep 0.2
  done
fi
curl -sf --unix-socket "$socket" http://podman/_ping > /dev/null
echo "podman answers on unix://$socket"

if ! { [ -s "$runner" ] && running "$(cat "$runner")"; }; then
  # A copy of its own, so that it too outlives the clone.
  install -m 0755 "$(dirname "$0")/health-checks.sh" /run/podman/health-checks.sh
  (cd / && { nohup /run/podman/health-checks.sh > /dev/null 2>&1 & echo $! > "$runner"; })
fi
echo "podman's health checks run every 2 seconds (pid $(cat "$runner"))"
