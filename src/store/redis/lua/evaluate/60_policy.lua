-- ---- policies (policy.c) -------------------------------------------------------------

-- The key's value: for each state, its limit's 8-byte id, the length of
-- its value (one byte, or 255 and four bytes), the value. The state of
-- limit `id`, or nil (the last record when a value repeats an id).
local function find_field(raw, id)
    local found = nil
    local pos, len = 1, #raw
    while pos + 9 <= len do
        local n = string.byte(raw, pos + 8)
        local at = pos + 9
        if n == 255 then
            n, at = struct.unpack('<I4', raw, at)
        end
        if string.sub(raw, pos, pos + 7) == id then
            found = string.sub(raw, at, at + n - 1)
        end
        pos = at + n
    end
    return found
end

-- A batch's keys -> their values (false: none), read with one MGET and
-- kept as the batch writes them; nil: one GET per evaluation.
local cache = nil

-- How this call sets expiries (70_main.lua): 'PXAT' when now is the
-- server's TIME, 'PX' (relative) when it is the caller's clock.
local expiry_opt = 'PX'
-- The last expiry written as a string, and its number: the keys a call
-- charges mostly share one (the same now, the same limit), and Redis
-- turns a number argument into a string at every command (about 2k
-- instructions) and formatting one in Lua costs more.
local expiry_ms, expiry_str = -1, ''

-- Writes key's value, set to expire when its last state (exp) has
-- recovered (at least 1 ms after now). `keep`: the key's expiry is already
-- no earlier than that -- the value it replaces had a state ending at exp
-- or later, and every write (of any version of this script) set the key's
-- expiry to its last state's end -- so SET ... KEEPTTL leaves it (about
-- 4k instructions less than setting one: a fixed window charged again
-- within its window). Otherwise, on the server's clock that moment
-- is a PXAT deadline on Redis's own clock: SET ... PX is propagated as
-- PXAT, a rewrite of the command that costs Redis about 2k instructions.
-- On a caller's clock it stays relative (PX), so that a clock that is not
-- Redis's still gives each key the lifetime its states need.
local function set_value(key, value, exp, now, keep)
    if keep then
        redis.call('SET', key, value, 'KEEPTTL')
        if cache then
            cache[key] = value
        end
        return
    end
    local ms
    if expiry_opt == 'PXAT' then
        ms = exp > now and ceil_div(exp, 1000) or idiv(now, 1000) + 1
    else
        ms = exp > now and ceil_div(exp - now, 1000) or 1
    end
    if ms ~= expiry_ms then
        expiry_ms, expiry_str = ms, string.format('%d', ms)
    end
    redis.call('SET', key, value, expiry_opt, expiry_str)
    if cache then
        cache[key] = value
    end
end

-- Writes the key's value back when a state changed (the memory store
-- would have written that slot or changed that block): every state the
-- key had or a step touched, without the states of limits no longer in
-- the policy, the key set to expire when every state has recovered.
local function write_back(key, limits, states, now)
    local n = #limits
    local value, changed = '', false
    local maxexp, oldmax = 0, -1
    for i = 1, n do
        local l, st = limits[i], states[i]
        local old = st.old
        local new = nil
        if old and #old >= 7 then -- every state starts with its exp
            local e = struct.unpack('<I7', old)
            if e > oldmax then
                oldmax = e
            end
        end
        if st.keep then -- not read by this call (a refund's other limits)
            new = old
        elseif old or st.touched or st.dirty then -- a new state left alone stays unwritten
            local kind = l.kind
            -- a state holding reservations says so in one more byte;
            -- others keep the layout they always had
            if kind == 0 then
                new = struct.pack('<I7I7', st.exp, st.word)
                if st.held then
                    new = new .. '\1'
                end
            elseif kind == 1 then
                new = struct.pack('<I7I5', st.exp, st.word)
                if st.held then
                    new = new .. '\1'
                end
            elseif kind == 4 then
                new = struct.pack('<I7I4I4', st.exp, st.word, st.c)
            else
                new = l.mod.encode(l, st)
            end
        end
        if new ~= old then
            changed = true
        end
        if new then
            local len = #new
            if len < 255 then
                value = value .. l.id .. string.char(len) .. new
            else
                value = value .. l.id .. '\255' .. struct.pack('<I4', len) .. new
            end
            if st.exp > maxexp then
                maxexp = st.exp
            end
        end
    end
    if changed then
        if value == '' then
            redis.call('DEL', key)
            if cache then
                cache[key] = false
            end
        else
            set_value(key, value, maxexp, now, maxexp <= oldmax)
        end
    end
end

-- What the last admitted reservation held for later (policy.c: the
-- sl__held_t it fills), for a refund (65_refund.lua): when it runs
-- (held_at, 0: nothing held) and where each limit's state ended.
local held_at = 0
local held_exp = {}

-- Reads the states of `limits` from `key`, evaluates, writes the value back
-- when a state changed (without the states of limits no longer in the
-- policy) and sets the key to expire when every state has recovered.
-- Returns the decision: allowed, limited, limit, remaining, reset, retry
-- (NEVER: never), delay, index; with `reply`, puts the per-limit reports
-- in it from reply[9] on. wait > 0 (and cost > 0): a reservation within
-- wait us, running no earlier than floor (policy.c: sl__policy_reserve;
-- with peek: nothing charged), for the rate family and fixed windows only
-- (the caller refuses the others).
local function evaluate(key, limits, now, cost, peek, shadow, reply, wait, floor)
    local raw
    if cache then
        raw = cache[key]
    else
        raw = redis.call('GET', key)
    end
    held_at = 0
    local n = #limits
    local states = {}
    local all = true
    local reserving = wait and wait > 0 and cost > 0
    local common = 0 -- a reservation: the largest delay, when every limit runs
    for i = 1, n do
        local l = limits[i]
        local old = nil
        if raw then
            old = find_field(raw, l.id)
        end
        local st = {exp = 0, word = 0, old = old, dirty = nil, touched = nil, c = nil, base = nil,
                    offs = nil, n = nil, allowed = false, delay = 0, retry = 0, rem_now = 0,
                    reset_now = 0, rem_ch = 0, reset_ch = 0, held = false, debt = 0}
        states[i] = st
        local kind = l.kind
        if kind == 0 then
            if old and #old == 14 then
                st.exp, st.word = struct.unpack('<I7I7', old)
            elseif old and #old == 15 then -- holding reservations
                st.exp, st.word = struct.unpack('<I7I7', old)
                st.held = true
            end
            rate_step(l, st, now, cost, false)
            if reserving then
                rate_reserve(l, st, cost, wait)
            end
        elseif kind == 1 then
            if old and #old == 12 then
                st.exp, st.word = struct.unpack('<I7I5', old)
            elseif old and #old == 13 then -- holding reservations
                st.exp, st.word = struct.unpack('<I7I5', old)
                st.held = true
            end
            fixed_step(l, st, now, cost, false)
            if reserving then
                fixed_reserve(l, st, now, cost, wait)
            end
        elseif kind == 4 then
            if old and #old == 15 then
                st.exp, st.word, st.c = struct.unpack('<I7I4I4', old)
            else
                st.c = 0
            end
            slide1_step(l, st, now, cost, false)
        else
            l.mod.decode(l, old, st)
            l.mod.decide(l, st, now, cost)
        end
        all = all and st.allowed
        if st.delay > common then
            common = st.delay
        end
    end
    if reserving and all and floor > common then
        common = floor
    end
    if reserving and all then
        -- every limit must be able to hold the common moment
        for i = 1, n do
            local l, st = limits[i], states[i]
            local reach = l.kind == 0 and rate_wait_max(l) or FIXED_WAIT_MAX
            if all and common > reach then
                all = false
                st.allowed = false
                st.retry = common - reach
            end
        end
    end
    if not peek and cost > 0 then
        for i = 1, n do
            local l, st = limits[i], states[i]
            if all or l.cd then
                local kind = l.kind
                if reserving and all then
                    if kind == 0 then
                        rate_reserve_commit(l, st, now, now + common, cost)
                    else
                        fixed_reserve_commit(l, st, now, now + common, cost)
                    end
                elseif kind == 0 then
                    rate_step(l, st, now, cost, true)
                elseif kind == 1 then
                    fixed_step(l, st, now, cost, true)
                elseif kind == 4 then
                    slide1_step(l, st, now, cost, true)
                else
                    l.mod.commit(l, st, now, cost)
                end
                st.touched = true
                if not all then -- a counted deny moved the state: report it as it now is
                    if kind == 0 then
                        rate_step(l, st, now, cost, false)
                        if reserving then
                            rate_reserve(l, st, cost, wait)
                        end
                    elseif kind == 1 then
                        fixed_step(l, st, now, cost, false)
                        if reserving then
                            fixed_reserve(l, st, now, cost, wait)
                        end
                    elseif kind == 4 then
                        slide1_step(l, st, now, cost, false)
                    else
                        l.mod.decide(l, st, now, cost)
                    end
                end
            end
        end
    end

    write_back(key, limits, states, now)
    if reserving and all and not peek and common > 0 then
        held_at = now + common
        for i = 1, n do
            held_exp[i] = states[i].exp
        end
    end

    -- The decision (policy.c report()), the most restrictive values.
    local after = all and not peek
    local tolerated = false
    local remaining, reset, retry, delay = NEVER, 0, -1, 0
    local by_rem, by_retry = 0, -1
    for i = 1, n do
        local l, vi = limits[i], states[i]
        local tol = l.cap - l.nominal
        local rem = after and vi.rem_ch or vi.rem_now
        if vi.allowed and vi.rem_ch < tol then
            tolerated = true
        end
        rem = rem > tol and rem - tol or 0
        if rem < remaining then
            remaining = rem
            by_rem = i - 1
        end
        local rs = after and vi.reset_ch or vi.reset_now
        if rs > reset then
            reset = rs
        end
        if vi.delay > delay then
            delay = vi.delay
        end
        if not vi.allowed and vi.retry > retry then
            retry = vi.retry
            by_retry = i - 1
        end
        if reply then
            local at = 3 + 5 * i
            reply[at + 1] = vi.allowed and 1 or 0
            reply[at + 2] = l.nominal
            reply[at + 3] = rem
            reply[at + 4] = rs
            local r = vi.retry
            if vi.allowed then
                r = 0
            elseif r == NEVER then
                r = -1
            end
            reply[at + 5] = r
        end
    end
    local by = all and by_rem or by_retry
    if reserving and all then
        delay = common -- a floor may put it later than every limit's own place
    end
    if all then
        return true, tolerated, limits[by + 1].nominal, remaining, reset, 0, delay, by
    end
    if shadow then
        return true, true, limits[by + 1].nominal, remaining, reset, 0, 0, by
    end
    return false, true, limits[by + 1].nominal, remaining, reset, retry, 0, by
end

-- The common case alone: a plain decision (no peek, shadow, pool or
-- reservation) of a policy of one rate limit whose key holds that state
-- alone, as the general path would decide it (rate_step, its charge and,
-- after a counted deny, its report of the state as it now is), written out
-- on local variables: a table field costs a hash lookup, a call of idiv()
-- a Lua call and a C call, and this path is most of what Redis runs. The
-- value is read once and written once. Returns true, allowed, limited,
-- remaining, reset and wait (allowed: the delay; denied: the retry, -1
-- never); false (nothing done) for another layout (a state holding
-- reservations, records of other limits), for the general path.
local function rate_one(key, l, now, cost)
    local raw
    if cache then
        raw = cache[key]
    else
        raw = redis.call('GET', key)
    end
    local pre = l.pre
    local exp, word = 0, 0
    if raw then
        if #raw ~= 23 or string.sub(raw, 1, 9) ~= pre then
            return false
        end
        exp, word = struct.unpack('<I7I7', raw, 10)
    end
    local exp0 = raw and exp or -1
    local rate, period, cap = l.rate, l.period, l.cap
    local tau = cap * period
    local dmax = l.cd and 2 * tau or tau
    -- debt_at(now), as rate_step: a state further ahead than dmax allows
    -- means the clock went back: it is set to dmax (and written)
    local debt, dirty = 0, false
    if exp > now then
        local ahead, valid = exp - now, false
        if ahead <= (dmax - fmod(dmax, rate)) / rate + 1 then
            if word >= rate then
                word = rate - 1
            end
            debt = ahead * rate - word
            valid = debt <= dmax
        end
        if not valid then
            debt, dirty = dmax, true
        end
    end
    local allowed, limited, rem, rs, wait = false, true, 0, 0, 0
    local charged = nil -- the debt to write
    local inc = cost <= cap and cost * period or 0
    if cost <= cap and debt + inc <= tau then
        allowed = true
        local d = debt + inc
        local r = fmod(tau - d, period)
        rem = (tau - d - r) / period
        r = fmod(d, rate)
        rs = (d - r) / rate + (r ~= 0 and 1 or 0)
        if l.shaper then -- the delay: until the debt before it has drained
            r = fmod(debt, rate)
            wait = (debt - r) / rate + (r ~= 0 and 1 or 0)
        end
        limited = rem < cap - l.nominal
        if cost > 0 then
            charged = d
        end
    else
        if cost > 0 and l.cd then -- a counted deny: reported as the state now is
            local d = debt
            if d <= dmax then
                d = debt + (cost > cap and dmax or inc)
                if d > dmax then
                    d = dmax
                end
            end
            charged, debt = d, d
        end
        if debt < tau then
            local r = fmod(tau - debt, period)
            rem = (tau - debt - r) / period
        end
        local r = fmod(debt, rate)
        rs = (debt - r) / rate + (r ~= 0 and 1 or 0)
        if cost > cap then
            wait = -1
        else
            local over = debt + inc - tau
            r = fmod(over, rate)
            wait = (over - r) / rate + (r ~= 0 and 1 or 0)
        end
    end
    if not charged and dirty then
        charged = dmax
    end
    if charged then -- rate_set: a plain charge never leaves a debt past dmax
        local r = fmod(charged, rate)
        local whole = (charged - r) / rate + (r ~= 0 and 1 or 0)
        exp = now + whole
        local value = pre .. struct.pack('<I7I7', exp, whole * rate - charged)
        if value ~= raw then
            set_value(key, value, exp, now, exp <= exp0)
        end
    end
    local tol = cap - l.nominal
    return true, allowed, limited, rem > tol and rem - tol or 0, rs, wait
end

-- One request: the reply of a single call, in `reply` when given (every
-- field is written). flags: 1 peek, 2 shadow, 4 elastic (then pool_key and
-- pool_limits are the pool's), 8 a reservation within wait us (an elastic
-- key its own limits deny borrows from the pool at once or not at all).
local function decide(key, limits, pool_key, pool_limits, now, cost, flags, reply, wait, floor)
    if not reply then
        if #limits == 1 then
            reply = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
        else
            reply = {0, 0, 0, 0, 0, 0, 0, 0}
        end
    end
    if flags == 0 and limits[2] == nil and limits[1].kind == 0 then
        local done, allowed, limited, rem, rs, wait = rate_one(key, limits[1], now, cost)
        if done then
            held_at = 0
            local nominal = limits[1].nominal
            local a, retry, delay = 0, wait, 0
            if allowed then
                a, retry, delay = 1, 0, wait
            end
            reply[1], reply[2], reply[3], reply[4], reply[5] = a, limited and 1 or 0, nominal, rem, rs
            reply[6], reply[7], reply[8] = retry, delay, 0
            reply[9], reply[10], reply[11], reply[12], reply[13] = a, nominal, rem, rs, retry
            return reply
        end
    end
    local peek = flags % 2 == 1 -- flags < 16: exact
    if flags < 8 then
        wait = nil
    end
    local allowed, limited, limit, remaining, reset, retry, delay, index =
        evaluate(key, limits, now, cost, peek, flags % 4 >= 2, reply, wait, floor or 0)
    if flags % 8 >= 4 and not allowed then
        local pool_allowed, _, _, _, _, pool_retry = evaluate(pool_key, pool_limits, now, cost,
                                                              peek, false, nil)
        if pool_allowed then -- borrowed: the key's own limits stay as they were
            allowed = true
            retry = 0
            remaining = 0
            index = -1
        elseif pool_retry < retry then
            retry = pool_retry
        end
    end
    reply[1] = allowed and 1 or 0
    reply[2] = limited and 1 or 0
    reply[3] = limit
    reply[4] = remaining
    reply[5] = reset
    reply[6] = retry == NEVER and -1 or retry
    reply[7] = delay
    reply[8] = index
    return reply
end

