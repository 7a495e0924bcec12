#!/bin/sh
# install-sql-servers.sh installs the SQL servers the end-to-end tests
# TestKinePostgres and TestKineMySQL run kine on, from the distribution's
# packages, when they are missing: PostgreSQL (package postgresql: initdb
# and postgres under /usr/lib/postgresql/N/bin) and MariaDB (package
# mariadb-server: mariadbd and mariadb-install-db). It installs only as
# root with apt-get; elsewhere, or when apt-get fails, it says what is
# missing and exits 0, and those tests skip, saying why. The tests start servers of their own, on
# ports of 127.0.0.1 as an unprivileged user; a service the packages
# start is not used.
set -eu
need=
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
	need="$need postgresql"
fi
if ! { command -v mariadbd || [ -x /usr/sbin/mariadbd ]; } >/dev/null 2>&1 || ! command -v mariadb-install-db >/dev/null 2>&1; then
	need="$need mariadb-server"
fi
if [ -z "$need" ]; then
	echo "install-sql-servers.sh: PostgreSQL and MariaDB are installed"
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-sql-servers.sh: missing:$need; not root with apt-get, so not installed: TestKinePostgres and TestKineMySQL skip" >&2
	exit 0
fi
echo "install-sql-servers.sh: installing$need"
# shellcheck disable=SC2086 # $need is a list of package names
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need; }; then
	echo "install-sql-servers.sh: apt-get could not install$need: the tests that need them skip" >&2
fi
