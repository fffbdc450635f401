#!/bin/sh
# edoburu/pgbouncer's start-up for one database: a userlist entry for DB_USER and a pgbouncer.ini
# from the environment, unless one is mounted.
set -e
config=/etc/pgbouncer/pgbouncer.ini
userlist=/etc/pgbouncer/userlist.txt
touch "$userlist"
if [ -n "$DB_USER" ] && [ -n "$DB_PASSWORD" ] && ! grep -q "^\"$DB_USER\"" "$userlist"; then
  if [ "$AUTH_TYPE" = plain ] || [ "$AUTH_TYPE" = scram-sha-256 ]; then
    pass="$DB_PASSWORD"
  else
    pass="md5$(printf '%s%s' "$DB_PASSWORD" "$DB_USER" | md5sum | cut -f 1 -d ' ')"
  fi
  echo "\"$DB_USER\" \"$pass\"" >> "$userlist"
  echo "Wrote authentication credentials for '$DB_USER' to $userlist"
fi
if [ ! -f "$config" ]; then
  echo "Creating pgbouncer config in /etc/pgbouncer"
  cat > "$config" <<INI
[databases]
${DB_NAME:-*} = host=${DB_HOST:?Setup pgbouncer config error! You must set DB_HOST env} port=${DB_PORT:-5432} auth_user=${DB_USER:-postgres}

[pgbouncer]
listen_addr = ${LISTEN_ADDR:-0.0.0.0}
listen_port = ${LISTEN_PORT:-5432}
unix_socket_dir =
user = postgres
auth_file = $userlist
auth_type = ${AUTH_TYPE:-md5}
${POOL_MODE:+pool_mode = $POOL_MODE}
${MAX_CLIENT_CONN:+max_client_conn = $MAX_CLIENT_CONN}
${DEFAULT_POOL_SIZE:+default_pool_size = $DEFAULT_POOL_SIZE}
ignore_startup_parameters = ${IGNORE_STARTUP_PARAMETERS:-extra_float_digits}
admin_users = ${ADMIN_USERS:-postgres}
INI
fi
exec "$@"
