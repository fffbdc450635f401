#!/bin/sh
# A streaming replica of "db": a base backup on the first start (pg_basebackup -R writes
# standby.signal and the connection to the primary), then PostgreSQL in standby mode.
set -e
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  su-exec postgres pg_basebackup -h db -U postgres -D "$PGDATA" -R -X stream -c fast
fi
exec su-exec postgres postgres -D "$PGDATA"
