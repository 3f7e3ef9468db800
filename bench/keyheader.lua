-- keyheader.lua -- wrk script of bench/gateway_vs_nginx.sh: every request
-- carries a key in a header, so a rate limiter in front keys each request
-- by it.
--   wrk ... -s keyheader.lua URL -- 100000               X-Key: <1..100000>
--   wrk ... -s keyheader.lua URL -- 100000 xff           X-Forwarded-For: 10.a.b.c
--   wrk ... -s keyheader.lua URL -- 100000 header 0.5 100
--       half the requests on one of 100 hot keys (h1..h100, or 10.255.0.x),
--       the other half on the 100000 (a limit then refuses a steady share:
--       the hot keys' excess)
-- The xff form is for a limiter keyed by the client address behind a
-- trusted proxy (sluiced trusted_proxies, nginx set_real_ip_from).
local nkeys, xff, hotshare, nhot = 100000, false, 0, 100
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end

function init(args)
  if args[1] then nkeys = tonumber(args[1]) end
  xff = args[2] == "xff"
  if args[3] then hotshare = tonumber(args[3]) end
  if args[4] then nhot = tonumber(args[4]) end
  math.randomseed(os.time() * 1000 + (tid or 0))
end

function request()
  local hot = hotshare > 0 and math.random() < hotshare
  local k = hot and math.random(nhot) or math.random(nkeys)
  if xff then
    local a = hot and 255 or math.floor(k / 65536) % 256
    return wrk.format(nil, nil, {["X-Forwarded-For"] = string.format("10.%d.%d.%d",
      a, math.floor(k / 256) % 256, k % 256)})
  end
  return wrk.format(nil, nil, {["X-Key"] = (hot and "h" or "") .. tostring(k)})
end
