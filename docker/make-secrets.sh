#!/bin/sh
# Make the compose setup's secrets in docker/secrets/ (owner-only), once: the database
# password (and the pgpass line libpq reads it from) and the team key, which signs and
# keys team answers. Files that exist are kept, so every gate of a team can be given the
# same team key: copy the team's key to docker/secrets/team_key before running this.
set -eu
dir="${1:-$(dirname "$0")/secrets}"
umask 077
mkdir -p "$dir"
if [ ! -s "$dir/pg_password" ]; then
    od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "$dir/pg_password"
    echo >> "$dir/pg_password"
fi
if [ ! -s "$dir/pgpass" ]; then
    printf 'postgres:5432:gate:gate:%s\n' "$(cat "$dir/pg_password")" > "$dir/pgpass"
fi
if [ ! -s "$dir/team_key" ]; then
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$dir/team_key"
    echo >> "$dir/team_key"
    echo "made a team key in $dir/team_key: give the same file to every gate of the team" >&2
fi
chmod 600 "$dir/pg_password" "$dir/pgpass" "$dir/team_key"
