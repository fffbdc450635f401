#!/bin/sh
# The compose stacks' "secrets" service: on the first `up`, random secrets for this stack; on every
# later one, the same. Each container that needs one gets a volume holding only what it needs,
# mounted at /secrets there (docs/scaling-and-containers.md#who-holds-which-secret), and nothing is in any
# container's environment (`docker inspect` shows only file names). Mounted here:
#   /secrets            the "secrets" volume, for PostgreSQL and the one-shot migrate service:
#     postgres_password      PostgreSQL's superuser, read by the postgres image as root (0400)
#     app_db_password        the service's role, and the replica's (with a replica), read by
#     replication_password   PostgreSQL's init scripts as the postgres user, whose uid differs
#                            between images (0444)
#     database_direct_url    the migrate service's: the superuser's connection string, and the
#     database_url           service's, whose role it grants its rights (node, uid 1000, 0400)
#   /api-secrets        the service's: jwt_secret, database_url[, database_replica_url] (node, 0400)
#   /pgbouncer-secrets  PgBouncer's, when mounted: app_db_password (its user's uid differs: 0444)
#   /replica-secrets    the replica's, when mounted: replication_password (read as root, 0400)
# The connection strings' hosts: DATABASE_HOST (where queries go: db, or pgbouncer) and
# REPLICA_HOST (none: no replica), from compose.
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

# A stack made when every secret was in this one volume kept the service's here: its signing
# secret moves to the service's volume (tokens already issued stay good), the rest is made anew.
if [ -s jwt_secret ] && [ ! -s /api-secrets/jwt_secret ]; then
  mv jwt_secret /api-secrets/jwt_secret
fi
rm -f jwt_secret database_replica_url

make_secret postgres_password
make_secret app_db_password
if [ -d /replica-secrets ]; then
  make_secret replication_password
fi
make_secret /api-secrets/jwt_secret

# Hex needs no escaping in a connection string: the files are the URLs the processes read.
app_url="postgresql://bike_catalog:$(cat app_db_password)"
printf 'postgresql://postgres:%s@db:5432/bikes\n' "$(cat postgres_password)" > database_direct_url
printf '%s@%s:5432/bikes\n' "$app_url" "$DATABASE_HOST" > database_url
cp database_url /api-secrets/database_url
if [ -n "${REPLICA_HOST:-}" ]; then
  printf '%s@%s:5432/bikes\n' "$app_url" "$REPLICA_HOST" > /api-secrets/database_replica_url
fi

chown 0:0 postgres_password app_db_password
chmod 0400 postgres_password
chmod 0444 app_db_password
chown 1000:1000 database_direct_url database_url /api-secrets/*
chmod 0400 database_direct_url database_url /api-secrets/*
if [ -d /replica-secrets ]; then
  chown 0:0 replication_password
  chmod 0444 replication_password
  cp replication_password /replica-secrets/replication_password
  chmod 0400 /replica-secrets/replication_password
fi
if [ -d /pgbouncer-secrets ]; then
  cp app_db_password /pgbouncer-secrets/app_db_password
  chmod 0444 /pgbouncer-secrets/app_db_password
fi
