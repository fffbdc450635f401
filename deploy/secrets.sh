#!/bin/sh
# The compose stacks' "secrets" service: on the first `up`, random secrets for this stack in the
# secrets volume; on every later one, the same. Nothing to set, nothing in any container's
# environment (`docker inspect` shows only file names). Each file is readable by whoever needs it
# and nobody else in the stack's containers:
#   postgres_password      PostgreSQL's superuser, read by the postgres image as root (0400)
#   app_db_password        the service's role, read by PostgreSQL's init script and PgBouncer,
#   replication_password   and the replica's role, read by PostgreSQL's init script and the replica;
#                          those run as the postgres user, whose uid differs between images (0444)
#   jwt_secret, database_url, database_direct_url[, database_replica_url]
#                          the service's signing secret and connection strings, for its user,
#                          node, uid 1000 (0400). Their hosts: DATABASE_HOST (where queries go:
#                          db, or pgbouncer) and REPLICA_HOST (none: no replica), from compose.
set -eu
umask 077
cd /secrets

# 256 random bits in hex: safe in a connection string, a password file or an ini file as they are.
make_secret() {
  if [ ! -s "$1" ]; then
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$1.new"
    mv "$1.new" "$1"
    echo "secrets: made $1"
  fi
}
for name in postgres_password app_db_password replication_password jwt_secret; do
  make_secret "$name"
done
# Hex needs no escaping in a connection string: the files are the URLs the service reads.
app_url="postgresql://bike_catalog:$(cat app_db_password)"
printf '%s@%s:5432/bikes\n' "$app_url" "$DATABASE_HOST" > database_url
printf 'postgresql://postgres:%s@db:5432/bikes\n' "$(cat postgres_password)" > database_direct_url
service_files="jwt_secret database_url database_direct_url"
if [ -n "${REPLICA_HOST:-}" ]; then
  printf '%s@%s:5432/bikes\n' "$app_url" "$REPLICA_HOST" > database_replica_url
  service_files="$service_files database_replica_url"
fi

chown 0:0 postgres_password app_db_password replication_password
chmod 0400 postgres_password
chmod 0444 app_db_password replication_password
# shellcheck disable=SC2086 # a list of file names
chown 1000:1000 $service_files
# shellcheck disable=SC2086
chmod 0400 $service_files
