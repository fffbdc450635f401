#!/bin/sh
# The replica service of the scaled stack: on its first start, a base backup of "db" through the
# replication slot "replica" (pg_basebackup -R writes standby.signal and how to reach the
# primary), then PostgreSQL in standby mode. The slot keeps the WAL the replica has not received,
# so a replica that was stopped catches up (up to the primary's max_slot_wal_keep_size). Started
# by the postgres image as root; a failure exits, and the restart policy tries again.
set -e
export PGPASSWORD="$(cat /secrets/replication_password)"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  # A slot left by an earlier replica (its volume removed) would hold WAL for no one: it goes.
  gosu postgres psql 'host=db user=replicator replication=true' -c 'DROP_REPLICATION_SLOT replica' 2> /dev/null || true
  gosu postgres pg_basebackup -h db -U replicator -D "$PGDATA" -R -X stream -c fast -C -S replica
fi
unset PGPASSWORD
exec gosu postgres postgres -D "$PGDATA"
