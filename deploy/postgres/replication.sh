#!/bin/sh
# Run once by the postgres image when it creates the cluster: a role that may only stream
# (replicator), and a pg_hba.conf line that lets it.
set -e
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v password="$(cat "$REPLICATION_PASSWORD_FILE")" <<'SQL'
CREATE ROLE replicator REPLICATION LOGIN PASSWORD :'password';
SQL
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
