-- sluice.lua -- HAProxy asks sluiced before it routes a request (HAProxy 2.2 or later).
-- Load it with "lua-load sluice.lua" in global, then in a frontend:
--     http-request lua.sluice per_ip        (the argument names the policy)
-- sluiced's forward-auth answers 200: the request goes on, and its rate limit
-- headers wait in txn.sluice_* for http-response; anything else (its 429 with
-- Retry-After) is answered to the client as sluiced gave it. No answer within
-- 250 ms (sluiced down or slow) is on_error. docs/migrate/haproxy.md explains
-- the choices.
local host, port = "127.0.0.1", 8090  -- sluiced's HTTP front
local on_error = 503                  -- fail closed; 200 lets requests through (fail open)

core.register_action("sluice", {"http-req"}, function(txn, policy)
    local s, status, h = core.tcp(), on_error, {}
    s:settimeout(0.25)
    if s:connect(host, port) and s:send("GET /v1/auth/" .. policy .. " HTTP/1.0\r\nX-Forwarded-For: " ..
            txn.f:src() .. "\r\nX-Original-URI: " .. txn.f:path() .. "\r\nX-Original-Method: " ..
            txn.f:method() .. "\r\n\r\n") then
        status = tonumber((s:receive("*l") or ""):match("^HTTP/1%.%d (%d%d%d)")) or on_error
        for line in function() return s:receive("*l") end do
            if line == "" then break end
            local k, v = line:match("^([^:]+):%s*(.-)%s*$")
            if k then h[k:lower()] = v end
        end
    end
    s:close()
    if status == 200 then
        txn:set_var("txn.sluice_ratelimit", h["ratelimit"] or "")
        txn:set_var("txn.sluice_ratelimit_policy", h["ratelimit-policy"] or "")
        return
    end
    local reply = txn:reply{status = status}
    for _, k in ipairs{"retry-after", "ratelimit", "ratelimit-policy", "www-authenticate"} do
        if h[k] then reply:add_header(k, h[k]) end
    end
    txn:done(reply)
end, 1)
