#!/bin/sh
# The official nginx image's start-up, as its entrypoint defines it (see the Containerfile).
set -e
if [ "$1" = nginx ]; then
  for f in $(find /docker-entrypoint.d/ -follow -type f -print | sort -V); do
    case "$f" in
      *.envsh) if [ -x "$f" ]; then echo "$0: Sourcing $f"; . "$f"; fi ;;
      *.sh) if [ -x "$f" ]; then echo "$0: Launching $f"; "$f"; fi ;;
    esac
  done
  # Only the variables set in the environment are replaced: nginx's own $variables stay.
  defined=$(printf '${%s} ' $(env | cut -d= -f1))
  for template in /etc/nginx/templates/*.template; do
    [ -f "$template" ] || continue
    output="/etc/nginx/conf.d/$(basename "$template" .template)"
    echo "$0: Running envsubst on $template to $output"
    envsubst "$defined" < "$template" > "$output"
  done
fi
exec "$@"
