#!/usr/bin/env bash
# Schemathesis against a local wrangler dev of the service as it deploys, its three
# Workers (the edge in front, forwarding the management routes to the management
# Worker, both calling the objects' Worker): no 5xx, and every
# response (status, content type, headers, body) as public/openapi.json describes it.
# Usage: tests/contract.sh <path to st>
set -euo pipefail
st=$1
cd "$(dirname "$0")/.."
. tests/workers.sh
admin=contract-admin-token-0123456789abcdef
# The holders' Cloudflare sync is on (its key a variable of the objects' Worker,
# which `--var` does not reach), its API a port where nothing listens: a
# connection that fits the schema answers 400 in the words of the fault, never 5xx.
OBJECTS_CONFIG=build/objects/wrangler.contract.json
node -e '
  const fs = require("fs");
  const config = JSON.parse(fs.readFileSync("build/objects/wrangler.json", "utf8"));
  config.vars = { ...config.vars, CLOUDFLARE_TOKEN_KEY: "contract-cloudflare-token-key-0123456789abcdef",
                  CLOUDFLARE_API: "http://127.0.0.1:9/client/v4" };
  fs.writeFileSync(process.argv[1], JSON.stringify(config, null, 2));
' "$OBJECTS_CONFIG"
export OBJECTS_CONFIG
serve build/edge/wrangler.json \
  --var JWT_SECRET:contract-jwt-secret-0123456789abcdef --var ADMIN_TOKEN:$admin --var CACHE_SECONDS:0

key=$(curl -sf -X POST "$base/admin/licenses" -H "Authorization: Bearer $admin" | sed -n 's/.*"licenseKey":"\([^"]*\)".*/\1/p') \
  || fail "could not create a license"
[ -n "$key" ] || fail "could not create a license"
token=$(curl -sf -X POST "$base/v2/authentication/login/license" -H 'Content-Type: application/json' \
  -d "{\"licenseKey\": \"$key\"}" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p') || fail "could not log in"
[ -n "$token" ] || fail "could not log in"
bouncer=$(curl -sf -X POST "$base/api/feedTokens" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"scope": "all"}' | sed -n 's/.*"feedToken":"\([^"]*\)".*/\1/p') || fail "could not make a feed token"
[ -n "$bouncer" ] || fail "could not make a feed token"
machine=$(curl -sf -X POST "$base/api/machines" -H "Authorization: Bearer $token") || fail "could not add a machine"
machine_id=$(echo "$machine" | sed -n 's/.*"machineId":"\([^"]*\)".*/\1/p')
password=$(echo "$machine" | sed -n 's/.*"password":"\([^"]*\)".*/\1/p')
machine_token=$(curl -sf -X POST "$base/v1/watchers/login" -H 'Content-Type: application/json' \
  -d "{\"machine_id\": \"$machine_id\", \"password\": \"$password\"}" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p') \
  || fail "could not log a machine in"
[ -n "$machine_token" ] || fail "could not log a machine in"

# The edge forwards the management routes (the license, the feed token and the
# machine above went through it) and refuses alone what it can: operator calls
# without ADMIN_TOKEN past one client's 600 a minute, before they cross. The
# limiter counts per fixed minute, which the calls may straddle: past 600 within
# the first 1 200.
refused=
for n in $(seq 1 1200); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "$base/admin/status" -H "Authorization: Bearer glo_made-up-$n" \
    -H 'CF-Connecting-IP: 198.51.100.7') || fail "no answer"
  if [ "$code" = 429 ]; then refused=$n; break; fi
done
[ -n "$refused" ] || fail "1200 operator calls with made-up keys through the edge, and none refused"
[ "$refused" -gt 600 ] || fail "refused after $refused operator calls, not after 600"

# The edge counts, as they arrive, the calls the management Worker answers
# without rate-limiting bindings (a 429 can only be the edge's): logins per
# client (100 a minute, license keys and machines alike), usage reports in their
# credential's budget (120 a minute, its pulls'), those whose body does not
# parse too, and a holder's network lookups per license (120 a minute). Each
# refused past its count, within twice it (a minute's turn may fall between).
past() { # LIMIT NAME CURL-ARGUMENTS...
  local limit=$1 name=$2 n code
  shift 2
  for n in $(seq 1 $((2 * limit))); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$@") || fail "no answer"
    if [ "$code" = 429 ]; then
      [ "$n" -gt "$limit" ] || fail "$name refused after $n, not after $limit"
      return
    fi
  done
  fail "$((2 * limit)) $name through the edge, and none refused"
}
past 100 "license logins" -X POST "$base/v2/authentication/login/license" -H 'CF-Connecting-IP: 198.51.100.8' \
  -H 'Content-Type: application/json' -d '{"licenseKey": "glk_made-up"}'
past 100 "machine logins" -X POST "$base/v1/watchers/login" -H 'CF-Connecting-IP: 198.51.100.9' \
  -H 'Content-Type: application/json' -d '{"machine_id": "glm_made-up", "password": "x"}'
past 120 "usage reports" -X POST "$base/v1/usage-metrics" -H 'CF-Connecting-IP: 198.51.100.10' \
  -H "X-Api-Key: glf_$(printf '%064d' 0)" -H 'Content-Type: application/json' -d '{]'
past 120 "network lookups" -X POST "$base/api/networkStatus" -H "Authorization: Bearer $token" --data ip=8.8.8.8

# One worker each: with two threads, hypothesis's reading of lambda sources now and then
# trips CPython 3.11's parser ("AST constructor recursion depth mismatch"), a fault of the
# tool. The runs are separate processes, so they go side by side.
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance
# The holder's routes with an access token, the operator's with the admin token,
# CrowdSec's bouncers' with a feed token as their key, its engines' with a machine token.
"$st" run public/openapi.json --url "$base" -H "Authorization: Bearer $token" --exclude-path-regex '^/(admin|v1)/' \
  --checks "$checks" --max-examples 25 --seed 1 --workers 1 --no-color > "$state/holder.txt" 2>&1 &
holder=$!
"$st" run public/openapi.json --url "$base" -H "Authorization: Bearer $admin" --include-path-regex '^/admin/' \
  --checks "$checks" --max-examples 25 --seed 1 --workers 1 --no-color > "$state/operator.txt" 2>&1 &
operator=$!
"$st" run public/openapi.json --url "$base" -H "X-Api-Key: $bouncer" --include-path-regex '^/v1/decisions' \
  --checks "$checks" --max-examples 25 --seed 1 --workers 1 --no-color > "$state/bouncer.txt" 2>&1 &
bouncer_run=$!
"$st" run public/openapi.json --url "$base" -H "Authorization: Bearer $machine_token" \
  --include-path-regex '^/v1/(watchers|heartbeat|alerts|allowlists|usage-metrics)' \
  --checks "$checks" --max-examples 25 --seed 1 --workers 1 --no-color > "$state/machine.txt" 2>&1 &
machine_run=$!
status=0
wait $holder || status=1
wait $operator || status=1
wait $bouncer_run || status=1
wait $machine_run || status=1
cat "$state/holder.txt" "$state/operator.txt" "$state/bouncer.txt" "$state/machine.txt"
exit $status
