#!/bin/sh
# Names this clone's compose projects, once: COMPOSE_PROJECT_NAME in the .env next to each compose
# file (docker-compose.yml, deploy/bike-catalog-scaled/docker-compose.yml), which every compose
# implementation reads there. Without it compose names a project after its directory, so two
# clones in directories of the same name would share one stack: the second's `ps` would show the
# first's, and its `down -v` delete that catalog. The compose files refuse to run until it is set
# (docs/scaling-and-containers.md#one-project-per-clone).
# The name is the clone's directory's, then a checksum of its whole path: the same every time for
# this clone, another for a clone anywhere else. A name already in a .env is kept.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd -P)
base=$(basename "$root" | tr 'A-Z' 'a-z' | tr -cd 'a-z0-9_-')
sum=$(printf '%s' "$root" | cksum | cut -d' ' -f1)
name="${base:-bike-catalog}-$sum"

name_in() {
  env_file="$1/.env"
  if [ -f "$env_file" ] && grep -q '^COMPOSE_PROJECT_NAME=' "$env_file"; then
    echo "compose-project: $env_file keeps $(grep '^COMPOSE_PROJECT_NAME=' "$env_file" | tail -n 1)"
    return
  fi
  # Its own line, after whatever settings the file already has.
  if [ -s "$env_file" ] && [ -n "$(tail -c 1 "$env_file")" ]; then echo >> "$env_file"; fi
  echo "COMPOSE_PROJECT_NAME=$2" >> "$env_file"
  echo "compose-project: $env_file names the project $2"
}

name_in "$root" "$name"
name_in "$root/deploy/bike-catalog-scaled" "$name-scaled"
