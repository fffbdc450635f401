#!/bin/sh
# podman runs containers' health checks from systemd timers. Without systemd (this machine, CI,
# most containers) no one runs them, no container ever becomes healthy, and `docker-compose up`
# waits for ever on `condition: service_healthy`. This runs every health check of every running
# container every 2 seconds, until it is stopped. deploy/podman/engine.sh starts it.
while :; do
  for name in $(podman ps --filter health=starting --filter health=healthy --filter health=unhealthy --format '{{.Names}}'); do
    podman healthcheck run "$name" > /dev/null 2>&1 || true
  done
  sleep 2
done
