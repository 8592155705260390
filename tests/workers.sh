# Sourced by tests/contract.sh and tests/upgrade.sh (from the repository's root):
# the service as its three Workers under one local `wrangler dev`, on free ports,
# its state in a folder of its own, stopped and cleared when the script exits.

state=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill -KILL -- -$server 2>/dev/null || true; rm -rf "$state"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
base=http://127.0.0.1:$port

# A step that fails says so, with the server's log (a refused call between the
# Workers is in it), rather than ending the script with curl's status. wrangler
# writes a request's lines after its answer: a second for them.
fail() { echo "${0##*/}: $1"; sleep 1; cat "$state/wrangler.log"; exit 1; }

# serve EDGE_CONFIG [wrangler dev's own arguments]: the edge's configuration in
# front of build/manage/ and build/objects/, once it answers. `--var` reaches only
# the edge: the management Worker, which reads the same settings, is served from a
# copy of its configuration with each `--var NAME:VALUE` set, in the state's
# folder, away from any .dev.vars (whose values would win over them). wrangler's compiled
# code is kept between starts, as the e2e suite keeps it.
serve() {
  local edge=$1 vars=() args
  shift
  args=("$@")
  for ((i = 0; i < ${#args[@]}; i++)); do
    [ "${args[i]}" != --var ] || vars+=("${args[i + 1]/:/=}")
  done
  node deploy/with-vars.mjs build/manage/wrangler.json "$state/manage.json" "${vars[@]}"
  NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--require $PWD/tests/node-code-cache.cjs" \
  GREYLIST_CODE_CACHE=$PWD/target/tmp/node-code-cache \
  setsid node_modules/.bin/wrangler dev -c "$edge" -c "$state/manage.json" -c "${OBJECTS_CONFIG:-build/objects/wrangler.json}" --ip 127.0.0.1 --port "$port" \
    --inspector-port "$(free_port)" --persist-to "$state/data" --show-interactive-dev-session=false "$@" \
    > "$state/wrangler.log" 2>&1 &
  server=$!
  for _ in $(seq 1 300); do
    curl -s -o /dev/null "$base/openapi.json" && return
    kill -0 "$server" 2>/dev/null || fail "wrangler dev ended"
    sleep 0.2
  done
  fail "wrangler dev did not answer in 60 s"
}
