# Sourced by run.sh and fcall.sh: starts a private redis-server ($bin, default redis-server) on a
# free port with nothing on disk, sets $port and $pid, stops it by its pid on exit, prints its version.
bin=${1:-redis-server}
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
"$bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
echo "$("$bin" --version | cut -d' ' -f1-3)"
