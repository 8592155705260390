#!/usr/bin/env bash
# Between a deployment's two steps: the objects' Worker of one build behind the
# edge of another, whose calls are of another shape. The objects refuse them, and
# the client must be told to try again shortly (503, Retry-After), not be given a
# 500. The test build stands for the other edge: build.rs names its calls' shape
# with its test hooks, so build/objects/ refuses its calls as it would a
# different build's.
# Usage: tests/upgrade.sh (after make build and make build-test)
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/workers.sh
admin=upgrade-admin-token-0123456789abcdef

# The deployed edge's configuration, serving the test build's module instead.
mkdir -p "$state/edge"
node -e '
  const edge = require(process.argv[1]);
  delete edge.build;
  edge.main = process.argv[2];
  if (edge.assets) edge.assets.directory = process.argv[3];
  console.log(JSON.stringify(edge));
' "$PWD/build/edge/wrangler.json" "$PWD/build-test/index.js" "$PWD/public" > "$state/edge/wrangler.json"

serve "$state/edge/wrangler.json" --var JWT_SECRET:upgrade-jwt-secret-0123456789abcdef --var ADMIN_TOKEN:$admin

# A license is the directory's to make: a call across to the objects' Worker.
status=$(curl -s -o "$state/body" -D "$state/headers" -w '%{http_code}' -X POST "$base/admin/licenses" \
  -H "Authorization: Bearer $admin" -H 'Accept: application/json') || fail "no answer"
[ "$status" = 503 ] || fail "a call the objects refused answered $status: $(cat "$state/body")"
tr -d '\r' < "$state/headers" > "$state/headers.lf"
grep -q -i -x 'retry-after: 5' "$state/headers.lf" || fail "no Retry-After: $(cat "$state/headers")"
grep -q -F 'Service unavailable: the service is being upgraded, try again in 5 seconds' "$state/body" \
  || fail "the answer says: $(cat "$state/body")"
# What the edge answers alone is unchanged.
status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/api/checkIpOnGreylist") || fail "no answer"
[ "$status" = 401 ] || fail "a request without a token answered $status"
echo "upgrade: a call the objects of another build refuse answers 503, Retry-After: 5"
