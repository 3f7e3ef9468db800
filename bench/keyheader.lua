-- keyheader.lua -- wrk script of bench/gateway_vs_nginx.sh: every request
-- carries a random key out of N in a header, so a rate limiter in front
-- keys each request by it.
--   wrk ... -s keyheader.lua URL -- 100000          X-Key: <1..100000>
--   wrk ... -s keyheader.lua URL -- 100000 xff      X-Forwarded-For: 10.a.b.c
-- The xff form is for a limiter keyed by the client address behind a
-- trusted proxy (sluiced trusted_proxies, nginx set_real_ip_from).
local nkeys, xff = 100000, false
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end

function init(args)
  if args[1] then nkeys = tonumber(args[1]) end
  xff = args[2] == "xff"
  math.randomseed(os.time() * 1000 + (tid or 0))
end

function request()
  local k = math.random(nkeys)
  if xff then
    return wrk.format(nil, nil, {["X-Forwarded-For"] = string.format("10.%d.%d.%d",
      math.floor(k / 65536) % 256, math.floor(k / 256) % 256, k % 256)})
  end
  return wrk.format(nil, nil, {["X-Key"] = tostring(k)})
end
