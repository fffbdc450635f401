#!/bin/sh
# Run once by the postgres image when it creates the cluster: the role the service's queries run
# as (not a superuser; it cannot create roles or databases or run programs). The service, which
# migrates as the superuser, then lets it read and change the catalog's tables, and nothing more.
set -e
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v password="$(cat "$APP_DB_PASSWORD_FILE")" <<'SQL'
CREATE ROLE bike_catalog LOGIN PASSWORD :'password';
SQL
