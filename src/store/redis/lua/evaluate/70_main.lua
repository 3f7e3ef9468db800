-- ---- main ------------------------------------------------------------------------------

local now
if ARGV[1] == '' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
    now = tonumber(ARGV[1])
end
if now < 0 then
    now = 0
elseif now > MAX_TIME then
    now = MAX_TIME
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
-- One reply table per number of limits, reused: each is packed at once.
local replies = {}
local function one(key, li, pool_key, pi, cost, flags, wait, floor)
    local pool_limits = nil
    if flags % 8 >= 4 then
        pool_limits = limits_at(pi)
    end
    local limits = limits_at(li)
    local n = #limits
    local reply = replies[n]
    if not reply then
        reply = {}
        for x = 1, 8 + 5 * n do
            reply[x] = 0
        end
        replies[n] = reply
    end
    return decide(key, limits, pool_key, pool_limits, now, cost, flags, reply, wait, floor)
end

-- The reply: one string, per request a status byte, then for 1 (decided)
-- the decision and its reports packed (script.c: REPLY_DECISION, _REPORT),
-- for 0 (failed) nothing more: thousands of integer replies would cost
-- Redis and the caller more than the decisions.
local formats = {}
local out = {}
local k = 1
for i = 1, #reqs / BATCH_BYTES do
    local li, pi, cost, flags, wait, floor =
        struct.unpack('<I2I2I7BI4I4', reqs, (i - 1) * BATCH_BYTES + 1)
    local key, pool_key = KEYS[k], nil
    k = k + 1
    if flags % 8 >= 4 then
        pool_key = KEYS[k]
        k = k + 1
    end
    local ok, r = pcall(one, key, li, pool_key, pi, cost, flags, wait, floor)
    if ok then
        local n = (#r - 8) / 5
        local f = formats[n]
        if not f then
            f = '<BBBI7I7I7i8I7i2' .. string.rep('BI7I7I7i8', n)
            formats[n] = f
        end
        out[i] = struct.pack(f, 1, unpack(r))
    else
        out[i] = '\0'
    end
end
return table.concat(out)
