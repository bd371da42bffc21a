#!/usr/bin/env bash
# Installs the few system packages the build and tests use, from Debian, when they are missing: make and git
# for the build, procps (pgrep, pkill) for the test fleet's guardian, and MariaDB's server, client and
# mariadb-backup for the database tests (test/mysqltest starts its own mariadbd processes on loopback; the
# physical backups of internal/backup run mariadb-backup and mbstream against them). Go itself is expected
# at /usr/local/go or on PATH; every other tool is built from the Go module proxy by hack/tools.sh.
set -euo pipefail

# MariaDB is pinned to a release series, not to one package version. Debian's security archive keeps only the
# newest point release of 10.11 (1:10.11.19-0+deb12u1 when this was written), so an exact pin would stop
# installing at the next security update; a series pin still refuses a silent jump to 11.x, whose SQL and
# defaults the tests were written against. Raise it on purpose, with the tests, when Debian moves on.
MARIADB_SERIES=10.11

has() { command -v "$1" >/dev/null || [[ -x /usr/sbin/$1 || -x /usr/bin/$1 ]]; }

need=()
has make || need+=(make)
has git || need+=(git)
has pkill || need+=(procps)
has mariadbd && has mariadb-install-db || need+=("mariadb-server=1:${MARIADB_SERIES}.*")
has mariadb && has mariadb-dump || need+=("mariadb-client=1:${MARIADB_SERIES}.*")
# mariadb-backup must be the server's own series: it reads InnoDB's files directly, and a backup tool of
# another series refuses (or worse, misreads) them. Same pin as the server.
has mariadb-backup && has mbstream || need+=("mariadb-backup=1:${MARIADB_SERIES}.*")
if ((${#need[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "install-deps: missing ${need[*]}; run as root or install them" >&2
    exit 1
  fi
  # The tests start their own servers, each with its own data directory and port; the package's own service
  # would only hold port 3306 and memory. Keep its maintainer scripts from starting it (policy-rc.d exit 101
  # means "action forbidden" to invoke-rc.d), unless the machine already forbids service starts this way.
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# The package's service is never needed: stop it if something started it, and keep it from starting at boot.
if has mariadbd; then
  if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    systemctl disable --now mariadb >/dev/null 2>&1 || true
  elif [[ -x /etc/init.d/mariadb ]]; then
    if [[ -s /run/mysqld/mysqld.pid ]] && kill -0 "$(cat /run/mysqld/mysqld.pid)" 2>/dev/null; then
      /etc/init.d/mariadb stop >/dev/null || true
    fi
    command -v update-rc.d >/dev/null && update-rc.d mariadb disable >/dev/null 2>&1 || true
  fi
fi
command -v go >/dev/null || [[ -x /usr/local/go/bin/go ]] || { echo "install-deps: Go 1.26 is required" >&2; exit 1; }
