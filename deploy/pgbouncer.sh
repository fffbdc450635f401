#!/bin/sh
# The pgbouncer service's entrypoint: the pgbouncer image's own, with the service role's password
# from the secrets volume (it reads DB_PASSWORD; this way it is in no container's configuration).
set -e
DB_PASSWORD="$(cat /secrets/app_db_password)"
export DB_PASSWORD
exec /entrypoint.sh "$@"
