-- wrk script for `make bench`, configured by environment variables:
--   BENCH_PATH    request path (with query)
--   BENCH_TOKENS  comma-separated access tokens, used in turn (one per license holder)
--   BENCH_IP      a fixed address, or "seq:<n>" for a new address each request, from the n-th on
--                 ("seq6:<n>" for a new IPv6 address each request, in 2a00:1450::/32)
--   BENCH_FIELD   the form field that carries the address (default ip)
--   BENCH_API_KEYS comma-separated CrowdSec API keys, used in turn: each request is then
--                 a bouncer's GET of BENCH_PATH with X-Api-Key (no form, no access token)
--   BENCH_ALERTS  a number n: each request is then a CrowdSec engine's POST of n alerts
--                 (a JSON array, ssh-bf, each of a new address as BENCH_IP's seq: gives
--                 them) with BENCH_TOKENS as machine tokens
-- done() prints one JSON line with throughput, latency percentiles in microseconds, and
-- errors: all of them, then those that were HTTP statuses of 400 or more, then time-outs.

local path = os.getenv("BENCH_PATH") or "/"
local field = os.getenv("BENCH_FIELD") or "ip"
local ip_spec = os.getenv("BENCH_IP") or ""
local tokens = {}
for token in string.gmatch(os.getenv("BENCH_TOKENS") or "", "[^,]+") do
  tokens[#tokens + 1] = token
end

local api_keys = {}
for key in string.gmatch(os.getenv("BENCH_API_KEYS") or "", "[^,]+") do
  api_keys[#api_keys + 1] = key
end

local alerts = tonumber(os.getenv("BENCH_ALERTS") or "")

-- One alert as CrowdSec's engine posts it, for the address `ip`.
local function alert(ip)
  return string.format(
    '{"scenario":"crowdsecurity/ssh-bf","scenario_hash":"","scenario_version":"",' ..
    '"message":"bench","events_count":8,"events":[],"capacity":5,"leakspeed":"10s",' ..
    '"start_at":"2026-11-26T10:00:00Z","stop_at":"2026-11-26T10:00:08Z",' ..
    '"source":{"ip":"%s","scope":"Ip","value":"%s"},' ..
    '"remediation":true,"simulated":false,"decisions":null}', ip, ip)
end

local threads = {}
function setup(thread)
  thread:set("thread_index", #threads)
  threads[#threads + 1] = thread
end

local counter = 0
local start = nil

-- Addresses 20.0.0.0 onwards are public; each thread draws from its own million.
local function address(n)
  local value = 20 * 16777216 + n
  return string.format("%d.%d.%d.%d", math.floor(value / 16777216) % 256, math.floor(value / 65536) % 256,
    math.floor(value / 256) % 256, value % 256)
end

function request()
  counter = counter + 1
  if #api_keys > 0 then
    -- CrowdSec's Local API logs a warning for a User-Agent not of the form name/version.
    return wrk.format("GET", path, {
      ["X-Api-Key"] = api_keys[(counter + thread_index) % #api_keys + 1],
      ["User-Agent"] = "greylist-bench/1",
    })
  end
  local ip = ip_spec
  local seq = string.match(ip_spec, "^seq:(%d+)$")
  if seq then
    ip = address(tonumber(seq) + thread_index * 1000000 + counter)
  end
  local seq6 = string.match(ip_spec, "^seq6:(%d+)$")
  if seq6 then
    local n = tonumber(seq6) + thread_index * 1000000 + counter
    ip = string.format("2a00:1450::%x:%x", math.floor(n / 65536) % 65536, n % 65536)
  end
  if alerts then
    local first = tonumber(string.match(ip_spec, "^seq:(%d+)$") or "0") + thread_index * 1000000 + counter * alerts
    local body = {}
    for n = 1, alerts do
      body[n] = alert(address(first + n))
    end
    return wrk.format("POST", path, {
      ["Content-Type"] = "application/json",
      ["Authorization"] = "Bearer " .. tokens[(counter + thread_index) % #tokens + 1],
    }, "[" .. table.concat(body, ",") .. "]")
  end
  local headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }
  if #tokens > 0 then
    headers["Authorization"] = "Bearer " .. tokens[(counter + thread_index) % #tokens + 1]
  end
  return wrk.format("POST", path, headers, field .. "=" .. ip)
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_us":%d,"p99_us":%d,"errors":%d,"status_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99),
    errors.connect + errors.read + errors.write + errors.status + errors.timeout, errors.status, errors.timeout))
end
