-- ---- main ------------------------------------------------------------------------------

local now
if ARGV[1] == '' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    expiry_opt = 'PXAT' -- now is Redis's clock: deadlines need no offset
else
    now = tonumber(ARGV[1])
end
if now < 0 then
    now = 0
elseif now > MAX_TIME then
    now = MAX_TIME
end

if ARGV[2] == 'r' then
    -- A refund (script.c: sl__redis_build_refund): ARGV[3] the limits,
    -- ARGV[4] the cost, when the place was (at) and where each limit's
    -- state ended, I7 each. Reply: the limits changed, as bits.
    local limits, blob = parse_limits(ARGV[3]), ARGV[4]
    local cost, at = struct.unpack('<I7I7', blob)
    local exps = {}
    for i = 1, #limits do
        exps[i] = struct.unpack('<I7', blob, 15 + 7 * (i - 1))
    end
    return refund(KEYS[1], limits, now, cost, at, exps)
end

if ARGV[2] ~= 'b' then
    -- The common costs and flags without tonumber(), which is not cheap.
    local cost = ARGV[2] == '1' and 1 or tonumber(ARGV[2])
    local flags = ARGV[3] == '0' and 0 or tonumber(ARGV[3])
    local pool_limits, wait, floor = nil, nil, 0
    if flags % 8 >= 4 then
        pool_limits = parse_limits(ARGV[5])
    end
    if flags >= 8 then
        wait, floor = tonumber(ARGV[6]), tonumber(ARGV[7])
    end
    return decide(KEYS[1], parse_limits(ARGV[4]), KEYS[2], pool_limits, now, cost, flags, nil, wait,
                  floor)
end

-- A batch: requests decided in order, each as one call would decide it;
-- one that fails inside the script is answered "failed", the others are
-- decided. Limits are parsed once per argument, and the keys are read
-- with one MGET (a command costs about as much as a decision).
local values = redis.call('MGET', unpack(KEYS))
cache = {}
for i = 1, #KEYS do
    cache[KEYS[i]] = values[i]
end
local reqs = ARGV[3]
local parsed = {}
local function limits_at(i)
    local l = parsed[i]
    if not l then
        l = parse_limits(ARGV[i])
        parsed[i] = l
    end
    return l
end

-- The reply: one string, per request a status byte, then for 1 (decided)
-- the decision and its reports packed (script.c: REPLY_DECISION, _REPORT),
-- for 2 (decided, a place held for later) the same then when it runs and
-- where each limit's state ended (I7 each: REPLY_HELD), for 3 to 6 (a
-- decision of rate_one: one limit, whose report is the decision; 3 + 1 when
-- allowed + 2 when limited) its remaining, reset and wait (allowed: the
-- delay, denied: the retry) as '<I7I7i8' (REPLY_COMPACT), for 0 (failed)
-- nothing more: thousands of integer replies would cost Redis and the
-- caller more than the decisions.
local formats = {}
local replies = {} -- one reply table per number of limits, reused: each is packed at once
local function one(key, li, pool_key, pi, cost, flags, at)
    local limits = limits_at(li)
    if flags == 0 and limits[2] == nil and limits[1].kind == 0 then
        local done, allowed, limited, rem, rs, wait = rate_one(key, limits[1], now, cost)
        if done then
            local status = 3
            if allowed then
                status = 4
            end
            if limited then
                status = status + 2
            end
            return struct.pack('<BI7I7i8', status, rem, rs, wait)
        end
    end
    local pool_limits, wait, floor = nil, nil, nil
    if flags % 8 >= 4 then
        pool_limits = limits_at(pi)
    end
    if flags >= 8 then
        wait, floor = struct.unpack('<I4I4', reqs, at + 12)
    end
    local n = #limits
    local reply = replies[n]
    if not reply then
        reply = {}
        for x = 1, 8 + 5 * n do
            reply[x] = 0
        end
        replies[n] = reply
    end
    local r = decide(key, limits, pool_key, pool_limits, now, cost, flags, reply, wait, floor)
    local f = formats[n]
    if not f then
        f = '<BBBI7I7I7i8I7i2' .. string.rep('BI7I7I7i8', n)
        formats[n] = f
    end
    if held_at > 0 then -- 2: and what its place held, for a refund
        local h = struct.pack('<I7', held_at)
        for x = 1, n do
            h = h .. struct.pack('<I7', held_exp[x])
        end
        return struct.pack(f, 2, unpack(r)) .. h
    end
    return struct.pack(f, 1, unpack(r))
end

local out = {}
local k = 1
for i = 1, #reqs / BATCH_BYTES do
    local at = (i - 1) * BATCH_BYTES + 1
    local li, pi, cost, flags = struct.unpack('<I2I2I7B', reqs, at)
    local key, pool_key = KEYS[k], nil
    k = k + 1
    if flags % 8 >= 4 then
        pool_key = KEYS[k]
        k = k + 1
    end
    local ok, s = pcall(one, key, li, pool_key, pi, cost, flags, at)
    out[i] = ok and s or '\0'
end
return table.concat(out)
