#!/bin/bash
# The database image's entrypoint: the interface of the official MariaDB and MySQL images, written for an image
# built from Debian's packages (hack/kind/images.sh).
#
#   docker-entrypoint.sh mariadbd [option ...]     (an option as the first argument implies mariadbd)
#
# On the first start, when the data directory has no system tables, it initialises it, then runs a temporary
# server with no networking and the binary log off, so that none of its own setup is replicated:
#   - the root password from MARIADB_ROOT_PASSWORD or MYSQL_ROOT_PASSWORD (or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD /
#     MYSQL_ALLOW_EMPTY_PASSWORD, or MARIADB_RANDOM_ROOT_PASSWORD / MYSQL_RANDOM_ROOT_PASSWORD), for root@localhost
#     and root@MARIADB_ROOT_HOST (default '%');
#   - MARIADB_DATABASE / MYSQL_DATABASE, and MARIADB_USER / MYSQL_USER with MARIADB_PASSWORD / MYSQL_PASSWORD,
#     granted every privilege on that database;
#   - /docker-entrypoint-initdb.d/*.sql, *.sql.gz and *.sh, in name order (a .sh file is run if executable,
#     sourced otherwise).
# The *_FILE variants of the passwords read them from files. Then it execs the server command it was given, so
# that the server is the container's main process and receives SIGTERM. Any other command is exec'd as is.
# Run as root, it prepares the directories and drops to the mysql user; run as that user (uid 999, as the
# StatefulSet does), it needs no privilege.
set -eo pipefail
shopt -s nullglob

log() { printf '%s [Entrypoint]: %s\n' "$(date -u +'%F %T%:z')" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# env_of NAME... prints the first of the variables (or the file named by NAME_FILE) that is set.
env_of() {
  local n
  for n in "$@"; do
    if [[ -n ${!n:-} ]]; then printf '%s' "${!n}"; return; fi
    local f=${n}_FILE
    if [[ -n ${!f:-} ]]; then cat "${!f}"; return; fi
  done
}

# sql_string quotes a value as an SQL string literal.
sql_string() {
  local s=${1//\\/\\\\}
  printf "'%s'" "${s//\'/\\\'}"
}
sql_ident() { printf '`%s`' "${1//\`/\`\`}"; }

if [[ ${1:0:1} == - ]]; then
  set -- mariadbd "$@"
fi
case $1 in
  mariadbd | mysqld) ;;
  *) exec "$@" ;;
esac

# The server's view of its options, with the command line's included (datadir comes from conf.d).
option() { "$@" --verbose --help 2>/dev/null | awk -v o="$OPTION" '$1 == o && /^[^ \t]/ { sub(/^[^ \t]+[ \t]+/, ""); print; exit }'; }
OPTION=datadir DATADIR=$(option "$@")
OPTION=socket SOCKET=$(option "$@")
DATADIR=${DATADIR%/}
[[ -n $DATADIR && -n $SOCKET ]] || die "cannot read datadir and socket from '$*' --verbose --help"

if ((EUID == 0)); then
  mkdir -p "$DATADIR" "$(dirname "$SOCKET")"
  chown mysql:mysql "$DATADIR" "$(dirname "$SOCKET")"
  exec setpriv --reuid=mysql --regid=mysql --init-groups -- "$BASH_SOURCE" "$@"
fi

if [[ ! -d $DATADIR/mysql ]]; then
  root_password=$(env_of MARIADB_ROOT_PASSWORD MYSQL_ROOT_PASSWORD)
  allow_empty=$(env_of MARIADB_ALLOW_EMPTY_ROOT_PASSWORD MYSQL_ALLOW_EMPTY_PASSWORD)
  random=$(env_of MARIADB_RANDOM_ROOT_PASSWORD MYSQL_RANDOM_ROOT_PASSWORD)
  if [[ -z $root_password && -z $allow_empty && -z $random ]]; then
    die "the data directory is empty and no root password is set: set MARIADB_ROOT_PASSWORD (or MYSQL_ROOT_PASSWORD), MARIADB_ALLOW_EMPTY_ROOT_PASSWORD or MARIADB_RANDOM_ROOT_PASSWORD"
  fi
  if [[ -n $random ]]; then
    root_password=$(tr -dc 'A-Za-z0-9' </dev/urandom | head -c 32)
    log "GENERATED ROOT PASSWORD: $root_password"
  fi
  root_host=$(env_of MARIADB_ROOT_HOST MYSQL_ROOT_HOST)
  root_host=${root_host:-%}
  database=$(env_of MARIADB_DATABASE MYSQL_DATABASE)
  user=$(env_of MARIADB_USER MYSQL_USER)
  password=$(env_of MARIADB_PASSWORD MYSQL_PASSWORD)
  if [[ -n $user && -z $password ]]; then die "MARIADB_USER/MYSQL_USER is set without a password"; fi
  [[ $user == root ]] && die "MARIADB_USER/MYSQL_USER may not be root: set the root password instead"

  log "Initialising the data directory $DATADIR"
  mkdir -p "$DATADIR"
  # The server's own options, but without the binary log and networking: nothing of this set-up is replicated.
  setup_opts=(--skip-log-bin --skip-networking --socket="$SOCKET" --expire-logs-days=0 --skip-slave-start
    --loose-innodb-buffer-pool-load-at-startup=0 --loose-innodb-buffer-pool-dump-at-shutdown=0)
  mariadb-install-db --datadir="$DATADIR" --rpm --skip-test-db --auth-root-authentication-method=normal \
    --cross-bootstrap "${@:2}" --skip-log-bin >/dev/null ||
    die "mariadb-install-db failed"

  "$@" "${setup_opts[@]}" &
  pid=$!
  for i in $(seq 60); do
    mariadb-admin --socket="$SOCKET" --user=root --connect-timeout=1 ping >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || die "the temporary server stopped during set-up"
    sleep 1
  done
  ((i < 60)) || die "the temporary server did not start within 60 s"
  client=(mariadb --protocol=socket --socket="$SOCKET" --user=root --database=mysql)

  {
    echo "SET @@SESSION.SQL_LOG_BIN = 0;"
    echo "DELETE FROM mysql.user WHERE User = '';"
    echo "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1';"
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY $(sql_string "$root_password");"
    if [[ $root_host != localhost ]]; then
      echo "CREATE USER 'root'@$(sql_string "$root_host") IDENTIFIED BY $(sql_string "$root_password");"
      echo "GRANT ALL ON *.* TO 'root'@$(sql_string "$root_host") WITH GRANT OPTION;"
      echo "GRANT PROXY ON ''@'%' TO 'root'@$(sql_string "$root_host") WITH GRANT OPTION;"
    fi
    if [[ -n $database ]]; then
      echo "CREATE DATABASE IF NOT EXISTS $(sql_ident "$database");"
    fi
    if [[ -n $user ]]; then
      echo "CREATE USER $(sql_string "$user")@'%' IDENTIFIED BY $(sql_string "$password");"
      [[ -n $database ]] && echo "GRANT ALL ON $(sql_ident "$database").* TO $(sql_string "$user")@'%';"
    fi
    echo "FLUSH PRIVILEGES;"
  } | "${client[@]}" || die "setting up users failed"

  export MYSQL_PWD=$root_password
  client=(mariadb --protocol=socket --socket="$SOCKET" --user=root)
  [[ -n $database ]] && client+=(--database="$database")
  for f in /docker-entrypoint-initdb.d/*; do
    case $f in
      *.sh)
        if [[ -x $f ]]; then log "running $f"; "$f"; else log "sourcing $f"; . "$f"; fi ;;
      *.sql) log "running $f"; { echo "SET @@SESSION.SQL_LOG_BIN = 0;"; cat "$f"; } | "${client[@]}" ;;
      *.sql.gz) log "running $f"; { echo "SET @@SESSION.SQL_LOG_BIN = 0;"; gzip -dc "$f"; } | "${client[@]}" ;;
      *) log "ignoring $f" ;;
    esac
  done

  mariadb-admin --socket="$SOCKET" --user=root shutdown || kill "$pid"
  wait "$pid" || true
  unset MYSQL_PWD
  log "Set-up done; starting the server"
fi

exec "$@"
