# Sourced, not run: `start_throwaway_postgres` installs PostgreSQL from Debian's packages
# if it is missing, starts a throwaway cluster on a free loopback port (fsync off: its data
# is thrown away), exports THROWAWAY_POSTGRES_URL, and stops and deletes the cluster when
# the sourcing script exits. Used by .ci/run and the scripts under bench/.
# max_locks_per_transaction is raised because every PostgreSQL test creates and drops a
# schema of its own (some tens of tables each, several tests at once): the default 64 ran
# out of lock slots ("out of shared memory") once the dashboard's tables joined them.

start_throwaway_postgres() {
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
        echo "installing PostgreSQL from Debian's packages"
        export DEBIAN_FRONTEND=noninteractive
        local SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq postgresql >/dev/null
        PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    fi
    PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    PGROOT=$(mktemp -d /tmp/nimbus-pg.XXXXXX)
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres:postgres "$PGROOT"
        AS_PG=(runuser -u postgres --)
    else
        AS_PG=()
    fi
    chmod 700 "$PGROOT"
    trap stop_throwaway_postgres EXIT
    "${AS_PG[@]}" "$PGBIN/initdb" -D "$PGROOT/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
        >"$PGROOT/initdb.log"
    "${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$PGROOT/data" -l "$PGROOT/server.log" -w -t 30 \
        -o "-p $PGPORT -k $PGROOT -c listen_addresses=127.0.0.1 -c max_connections=1000 -c max_locks_per_transaction=256 -c fsync=off" start
    echo "throwaway PostgreSQL on 127.0.0.1:$PGPORT"
    export THROWAWAY_POSTGRES_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres"
}

stop_throwaway_postgres() {
    "${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$PGROOT/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PGROOT"
}
