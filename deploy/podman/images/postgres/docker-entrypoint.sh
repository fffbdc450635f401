#!/usr/bin/env bash
# The official postgres image's start-up, as its documentation and entrypoint define it: on an
# empty PGDATA, initdb with the superuser's password, a server on the socket only while the
# database is made and /docker-entrypoint-initdb.d/ runs, then the real server.
set -Eeo pipefail

# VAR, or the contents of the file VAR_FILE names; not both.
file_env() {
  local var="$1" file_var="$1_FILE" value="${2:-}"
  if [ "${!var:-}" ] && [ "${!file_var:-}" ]; then
    echo >&2 "error: both $var and $file_var are set (but are exclusive)"
    exit 1
  fi
  if [ "${!var:-}" ]; then
    value="${!var}"
  elif [ "${!file_var:-}" ]; then
    value="$(< "${!file_var}")"
  fi
  export "$var"="$value"
  unset "$file_var"
}

sql() {
  PGHOST= PGHOSTADDR= psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc "$@"
}

if [ "${1:0:1}" = '-' ]; then
  set -- postgres "$@"
fi

if [ "$1" = 'postgres' ]; then
  file_env POSTGRES_PASSWORD
  file_env POSTGRES_USER postgres
  file_env POSTGRES_DB "$POSTGRES_USER"
  file_env POSTGRES_INITDB_ARGS
  : "${POSTGRES_HOST_AUTH_METHOD:=}"

  mkdir -p "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA" || :
  chmod 3775 /var/run/postgresql || :
  if [ "$(id -u)" = '0' ]; then
    find "$PGDATA" /var/run/postgresql \! -user postgres -exec chown postgres '{}' +
    exec gosu postgres "$BASH_SOURCE" "$@"
  fi

  if [ -s "$PGDATA/PG_VERSION" ]; then
    echo 'PostgreSQL Database directory appears to contain a database; Skipping initialization'
  else
    if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != 'trust' ]; then
      echo >&2 'Error: Database is uninitialized and superuser password is not specified.'
      echo >&2 '       You must specify POSTGRES_PASSWORD to a non-empty value for the superuser.'
      exit 1
    fi
    eval 'initdb --username="$POSTGRES_USER" --pwfile=<(printf "%s\n" "$POSTGRES_PASSWORD") '"$POSTGRES_INITDB_ARGS"
    shift # "postgres": its options go to both servers
    printf '\nhost all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-$(postgres -C password_encryption "$@")}" >> "$PGDATA/pg_hba.conf"

    export PGPASSWORD="${PGPASSWORD:-$POSTGRES_PASSWORD}"
    NOTIFY_SOCKET= PGUSER="${PGUSER:-$POSTGRES_USER}" \
      pg_ctl -D "$PGDATA" -o "$(printf '%q ' "$@" -c listen_addresses='' -p "${PGPORT:-5432}")" -w start
    if [ -z "$(sql --dbname postgres --set db="$POSTGRES_DB" --tuples-only <<< "SELECT 1 FROM pg_database WHERE datname = :'db'")" ]; then
      sql --dbname postgres --set db="$POSTGRES_DB" <<< 'CREATE DATABASE :"db"'
    fi
    shopt -s nullglob
    for f in /docker-entrypoint-initdb.d/*; do
      case "$f" in
        *.sh)
          echo "$0: running $f"
          if [ -x "$f" ]; then "$f"; else . "$f"; fi
          ;;
        *.sql)
          echo "$0: running $f"
          sql --dbname "$POSTGRES_DB" -f "$f"
          ;;
        *) echo "$0: ignoring $f" ;;
      esac
    done
    PGUSER="${PGUSER:-postgres}" pg_ctl -D "$PGDATA" -m fast -w stop
    unset PGPASSWORD
    echo 'PostgreSQL init process complete; ready for start up.'
    set -- postgres "$@"
  fi
fi

exec "$@"
