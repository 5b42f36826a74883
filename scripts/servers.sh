#!/usr/bin/env bash
# Fetches the server lines leasehold is tested on, next to the system's redis-server (Redis 7.0 on
# Debian bookworm), without installing anything system-wide:
#
#   .servers/valkey-8.0/redis-server   Valkey 8.0  (Debian bookworm-backports: runs on bookworm's libc)
#   .servers/redis-8.0/redis-server    Redis 8.0   (Debian trixie: runs through trixie's own loader and libs)
#   .servers/valkey-8.1/redis-server   Valkey 8.1  (Debian trixie, the same way)
#   .servers/redis-8.6/redis-server    Redis 8.6   (Debian experimental, with sid's loader and libs)
#   .servers/valkey-9.1/redis-server   Valkey 9.1  (Debian sid, the same way)
#
# Why these: Redis >= 7.2, Redis 8 and Valkey arm client tracking only for the keys a script
# actually reads, Redis 7.0 for every key it declares (docs/compatibility.md). Users run both.
#
# Use:   bash scripts/servers.sh [line ...]     (default: every line; already fetched ones are kept)
#        LEASEHOLD_REDIS_SERVER=.servers/redis-8.0/redis-server npm run test:integration
# Where: $LEASEHOLD_SERVERS_DIR, default ./.servers. Needs apt-get and a Debian mirror in the
# machine's apt sources (any suite: the script adds trixie, bookworm-backports, sid and experimental on its own, in a
# private apt state under the target folder). Prints each line's version when done.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${LEASEHOLD_SERVERS_DIR:-$PWD/.servers}"
lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(valkey-8.0 redis-8.0 valkey-8.1 redis-8.6 valkey-9.1)

# Shared libraries a trixie or sid server needs beyond its own package (libsystemd0 and what it
# pulls in); the same names in both suites.
trixie_libs=(libc6 libssl3t64 libstdc++6 libgcc-s1 libsystemd0 libjemalloc2 liblzf1 libatomic1
  libcap2 libzstd1 liblz4-1 liblzma5 libgcrypt20 libgpg-error0)

missing=()
for line in "${lines[@]}"; do
  case "$line" in
    valkey-8.0 | redis-8.0 | valkey-8.1 | redis-8.6 | valkey-9.1) ;;
    *) echo "scripts/servers.sh: unknown server line '$line' (known: valkey-8.0 redis-8.0 valkey-8.1 redis-8.6 valkey-9.1)" >&2; exit 2 ;;
  esac
  [ -x "$out/$line/redis-server" ] || missing+=("$line")
done

if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || { echo "scripts/servers.sh: needs apt-get (Debian or Ubuntu)" >&2; exit 1; }
  work="$out/.apt"
  mkdir -p "$work/lists/partial"
  # The first non-security Debian mirror the machine already uses.
  mirror=$(apt-get indextargets --format '$(REPO_URI)' | grep -v security | grep -i debian | sort -u | head -1 || true)
  [ -n "$mirror" ] || { echo "scripts/servers.sh: no Debian mirror in the apt sources" >&2; exit 1; }
  printf 'Types: deb\nURIs: %s\nSuites: trixie bookworm-backports sid experimental\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" >"$work/extra.sources"
  apt=(-o "Dir::Etc::sourcelist=$work/extra.sources" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$work/lists"
    -o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root)
  apt-get "${apt[@]}" update -qq >/dev/null
  cd "$work"
  rm -f ./*.deb

  # Unpacks the named packages (name/suite) into $1/root.
  unpack() {
    local dir=$1
    shift
    apt-get "${apt[@]}" download -qq "$@" >/dev/null
    rm -rf "$dir/root" && mkdir -p "$dir/root"
    for deb in ./*.deb; do dpkg -x "$deb" "$dir/root"; done
    rm -f ./*.deb
  }
  # A trixie (or sid) build runs through its own suite's dynamic loader and libraries. The server is
  # a multi-call binary: argv[0] "redis-server" selects server mode (and --sentinel still works).
  trixie_wrapper() {
    cat >"$1/redis-server" <<EOF
#!/bin/sh
d="\$(cd "\$(dirname "\$0")" && pwd)/root"; L="\$d/usr/lib/x86_64-linux-gnu"
exec "\$L/ld-linux-x86-64.so.2" --library-path "\$L" --argv0 redis-server "\$d/usr/bin/$2" "\$@"
EOF
    chmod +x "$1/redis-server"
  }

  for line in "${missing[@]}"; do
    dir="$out/$line"
    echo "fetching $line into $dir"
    case "$line" in
      valkey-8.0)
        unpack "$dir" valkey-tools/bookworm-backports
        ln -sf root/usr/bin/valkey-check-rdb "$dir/redis-server"
        ;;
      redis-8.0)
        unpack "$dir" redis-tools/trixie "${trixie_libs[@]/%//trixie}"
        trixie_wrapper "$dir" redis-check-rdb
        ;;
      valkey-8.1)
        unpack "$dir" valkey-tools/trixie "${trixie_libs[@]/%//trixie}"
        trixie_wrapper "$dir" valkey-check-rdb
        ;;
      redis-8.6)
        # experimental holds only the server; its libraries come from sid, which it is built for.
        unpack "$dir" redis-tools/experimental "${trixie_libs[@]/%//sid}"
        trixie_wrapper "$dir" redis-check-rdb
        ;;
      valkey-9.1)
        unpack "$dir" valkey-tools/sid "${trixie_libs[@]/%//sid}"
        trixie_wrapper "$dir" valkey-check-rdb
        ;;
    esac
  done
fi

for line in "${lines[@]}"; do
  printf '%-11s %s\n' "$line" "$("$out/$line/redis-server" --version)"
done
