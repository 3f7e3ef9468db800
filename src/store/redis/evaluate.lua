-- evaluate.lua -- one policy evaluation, or a batch of them, atomically, in
-- Redis: the exact counterpart of sl__policy_evaluate() over the memory
-- store (and, for elastic policies, the borrowing from the pool that
-- limiter.c does).
--
-- Lua numbers are doubles: every integer here stays below 2^53, which
-- sl__redis_policy_supported() guarantees for the policies it lets through
-- (script.c); products that could pass it (sub-window weights) go through
-- muldiv(). Divisions are exact: idiv() and ceil_div() use fmod, which never
-- rounds. Time is in microseconds.
--
-- KEYS[1]  the key's states: a string of records, one per limit: its 8-byte
--          id, the length of the state (1 byte, or 255 and 4 bytes), the
--          state. Smaller than a hash (measured in docs/distributed.md), and
--          one SET ... PX writes it with its expiry.
-- KEYS[2]  elastic only: the policy's pool, same layout
-- ARGV[1]  now (us since the epoch), or "" for the server's TIME
-- ARGV[2]  cost (clamped below 2^52 by the caller: larger costs all behave alike)
-- ARGV[3]  flags: 1 peek, 2 shadow, 4 elastic
-- ARGV[4]  the limits, 41 bytes each (script.c: put_limit)
-- ARGV[5]  elastic only: the pool's limit
--
-- Reply: allowed, limited, limit, remaining, reset_after, retry_after,
-- delay, limit_index, then per limit allowed, limit, remaining, reset_after,
-- retry_after. retry_after -1 means never.
--
-- A batch (ARGV[2] is "b"; script.c: sl__redis_build_evaluate_batch):
-- KEYS     each request's key in order, each followed by its pool key
--          when the request is elastic
-- ARGV[1]  now, as above, for every request
-- ARGV[3]  the requests, 12 bytes each: I2 the ARGV index of its limits,
--          I2 that of its pool's limit (0: none), I7 cost, B flags
-- ARGV[4.. the limits of each distinct policy (and of its pool)
-- Reply: one string; per request a status byte, then for 1 (decided) the
-- reply above packed as '<BBI7I7I7i8I7i2' .. per limit 'BI7I7I7i8', for 0
-- (failed inside the script, the others still decided) nothing.
--
-- State values (little-endian; exp = when the state has recovered):
--   rate           I7 exp, I7 frac (units of g/rate us, g = gcd(rate, period))
--   fixed_window   I7 exp, I5 count (kept at most capacity + 1)
--   sliding p=1    I7 exp, I4 I4 the two counters
--   sliding p=N    I7 exp, (N+1) x I4 counters; all zero = no record
--   sliding_log    I7 exp, I7 d (base = exp - d), then one offset from base
--                  per admitted unit, oldest first: I4 when period < 2^32,
--                  else I7; empty = no record
-- The value is rewritten exactly when the memory store would change a slot
-- or a block, so both stores see the same states whatever the clock does;
-- records of limits no longer in the policy go at that write.

local fmod = math.fmod
local MAX_TIME = 4503599627370496 -- 2^52: script.c clamps to it too
local NEVER = math.huge
local BATCH_BYTES = 12
-- Limit kinds (written as literals below, as are the 41 bytes of a limit:
-- every upvalue of a closure costs at every call): 0 rate family,
-- 1 fixed_window, 2 sliding_window, 3 sliding_log, 4 sliding_window of
-- precision 1 (2 on the wire).

-- Redis runs the whole script body at every call, and a closure or a table
-- costs about as much as the arithmetic of a decision: the common
-- algorithms are plain functions, the rest are built on first use, and
-- each limit's state and verdict share one table sized once.

-- floor(a / b) for a >= 0, b > 0.
local function idiv(a, b)
    return (a - fmod(a, b)) / b
end

-- ceil(a / b) for a >= 0, b > 0.
local function ceil_div(a, b)
    local r = fmod(a, b)
    local q = (a - r) / b
    if r ~= 0 then
        q = q + 1
    end
    return q
end

-- ---- gcra, token_bucket, leaky_bucket (gcra.c) -----------------------------------

-- State: exp, word = the fraction (units of g/rate us). Decides (the
-- verdict into st) or, with `commit`, charges `cost`.
local function rate_step(l, st, now, cost, commit)
    local rate, tau = l.rate, l.cap * l.period
    local dmax = l.cd and 2 * tau or tau
    -- debt_at(now): 0 when recovered; a state further ahead than dmax
    -- allows (the clock went back) is set to dmax
    local debt = 0
    if st.exp > now then
        local ahead = st.exp - now
        local valid = false
        if ahead <= idiv(dmax, rate) + 1 then
            local frac = st.word
            if frac >= rate then
                frac = rate - 1
            end
            debt = ahead * rate - frac
            valid = debt <= dmax
        end
        if not valid then
            debt = dmax
            local whole = ceil_div(dmax, rate)
            st.exp = now + whole
            st.word = whole * rate - dmax
            st.dirty = true
        end
    end
    if commit then
        local d = debt + (cost > l.cap and dmax or cost * l.period)
        if d > dmax then
            d = dmax
        end
        local whole = ceil_div(d, rate)
        st.exp = now + whole
        st.word = whole * rate - d
        return
    end
    local period = l.period
    local rem = 0
    if debt < tau then
        rem = idiv(tau - debt, period)
    end
    local reset = ceil_div(debt, rate)
    st.delay = 0
    st.rem_now, st.reset_now = rem, reset
    if cost > l.cap then
        st.allowed = false
        st.retry = NEVER
        st.rem_ch, st.reset_ch = rem, reset
        return
    end
    local d = debt + cost * period
    if d <= tau then
        st.allowed = true
        st.retry = 0
        st.rem_ch = idiv(tau - d, period)
        st.reset_ch = ceil_div(d, rate)
        if l.shaper then
            st.delay = reset
        end
    else
        st.allowed = false
        st.retry = ceil_div(d - tau, rate)
        st.rem_ch, st.reset_ch = rem, reset
    end
end

-- ---- fixed_window (window.c) --------------------------------------------------

-- State: exp = the window's end, word = the count.
local function fixed_step(l, st, now, cost, commit)
    local cap, period = l.cap, l.period
    local fend = (idiv(now, period) + 1) * period
    local count = 0
    if st.exp > now then
        if st.exp > fend then
            st.exp = fend
            st.dirty = true
        end
        count, fend = st.word, st.exp
    end
    if commit then
        st.exp = fend
        -- Any count above capacity denies every cost alike: keep it small.
        count = count + cost
        if count > cap + 1 then
            count = cap + 1
        end
        st.word = count
        return
    end
    st.delay = 0
    st.rem_now = count < cap and cap - count or 0
    st.reset_now = count > 0 and fend - now or 0
    if cost <= cap and count <= cap - cost then
        st.allowed = true
        st.retry = 0
        st.rem_ch = cap - count - cost
        st.reset_ch = (count + cost > 0) and fend - now or 0
    else
        st.allowed = false
        st.retry = cost > cap and NEVER or fend - now
        st.rem_ch, st.reset_ch = st.rem_now, st.reset_now
    end
end

-- ---- sliding_window, precision 1 (window.c) ------------------------------------------

local module_of -- below

-- The general module (module_of(2)) with its block of m = 2 counters
-- written out: the counter of window k is in slot k mod 2, `word` (even k)
-- or `c` (odd k), numbers here. first_elapsed: the general module's.
local function first_elapsed1(p, k, s)
    if p == 0 then
        return 0
    end
    local a = k + 1
    if a > p then -- floor((a*s - 1)/p) >= s
        return 0
    end
    local prod, q, r = a * s, 0, 0
    if prod < 9007199254740992 then
        r = fmod(prod, p)
        q = (prod - r) / p
    else
        q, r = module_of(2).muldiv(a, s, p)
    end
    local span = r > 0 and q or q - 1
    return s - span
end

local function slide1_step(l, st, now, cost, commit)
    local s, cap = l.period, l.cap -- one sub-window: the period
    local c0, c1 = st.word, st.c -- the word's copy: changes are not kept
    local j = idiv(now, s)
    if st.exp <= now then
        c0, c1 = 0, 0
    else
        local last = idiv(st.exp, s) - 2
        if j < last then
            if fmod(last - j, 2) == 1 then -- rotate_left by one
                c0, c1 = c1, c0
            end
            st.exp = (j + 2) * s
            st.word, st.c = c0, c1
            st.dirty = true
            last = j
        end
        local k = last + 1
        while k <= j and k <= last + 2 do
            local slot = fmod(k, 2) -- -1 for k = -1: no slot, as in the module
            if slot == 0 then
                c0 = 0
            elseif slot == 1 then
                c1 = 0
            end
            k = k + 1
        end
    end
    local e = now - j * s
    local even = fmod(j, 2) == 0
    if commit then
        if even then
            c0 = c0 + cost
            if c0 > 4294967295 then
                c0 = 4294967295
            end
        else
            c1 = c1 + cost
            if c1 > 4294967295 then
                c1 = 4294967295
            end
        end
        st.exp = (j + 2) * s
        st.word, st.c = c0, c1
        return
    end
    -- counter(j) is the newest, counter(j - 1) the oldest
    local newest, oldest = c1, c0
    if even then
        newest, oldest = c0, c1
    end
    local prod, est = oldest * (s - e), 0
    if prod < 9007199254740992 then
        est = (prod - fmod(prod, s)) / s
    else
        est = (module_of(2).muldiv(oldest, s - e, s))
    end
    est = est + newest
    -- reset with nothing added: the newest non-zero counter's window
    local reset = 0
    if newest ~= 0 then
        reset = (j + 2) * s - now
    elseif oldest ~= 0 then
        reset = (j + 1) * s - now
    end
    st.delay = 0
    st.rem_now = est < cap and cap - est or 0
    st.reset_now = reset
    if cost <= cap and est <= cap - cost then
        st.allowed = true
        st.retry = 0
        st.rem_ch = cap - est - cost
        st.reset_ch = cost > 0 and (j + 2) * s - now or reset
        return
    end
    st.allowed = false
    st.rem_ch, st.reset_ch = st.rem_now, reset
    if cost > cap then
        st.retry = NEVER
        return
    end
    -- slide_retry: in this window, then in the next one (the oldest gone)
    if newest + cost <= cap then
        local at = first_elapsed1(oldest, cap - cost - newest, s)
        if at < e then
            at = e
        end
        if at < s then
            st.retry = j * s + at - now
            return
        end
    end
    if cost <= cap then
        local at = first_elapsed1(newest, cap - cost, s)
        if at < s then
            st.retry = (j + 1) * s + at - now
            return
        end
    end
    st.retry = (j + 2) * s - now
end

-- ---- sliding_window, sliding_log: modules built on first use ----------------------

-- A module has decode (the state as the memory store's cell: exp and the
-- inline word or the block; a value of the wrong shape, never written by
-- this script, reads as fresh), encode (nil: the same as no state), decide
-- and commit.
local slide_m, log_m

-- Everything it uses is its own (each upvalue of a closure costs at every
-- call); slide_m and log_m keep what it built for the rest of the call.
function module_of(kind)
    if kind == 2 and slide_m then
        return slide_m
    elseif kind == 3 and log_m then
        return log_m
    end
    local fmod = math.fmod
    local TWO53 = 9007199254740992
    local U32_MAX = 4294967295
    local NEVER = math.huge

    local function idiv(a, b)
        return (a - fmod(a, b)) / b
    end

    local function sat_sub(a, b)
        if a > b then
            return a - b
        end
        return 0
    end

    -- big products, u32 arrays packed in strings
    local function packed_module()
        -- floor(a * b / c) and the remainder, for a, b >= 0, 0 < c <= 2^52, when
        -- the quotient is below 2^53 (the product need not be).
        local function muldiv(a, b, c)
            local p = a * b
            if p < TWO53 then
                local r = fmod(p, c)
                return (p - r) / c, r
            end
            local rb = fmod(b, c)
            local q, r = a * ((b - rb) / c), 0
            local bits, n = {}, 0
            while a > 0 do
                local bit = fmod(a, 2)
                n = n + 1
                bits[n] = bit
                a = (a - bit) / 2
            end
            local qq = 0
            for i = n, 1, -1 do -- binary long multiplication, reduced mod c as it goes
                qq = qq * 2
                r = r * 2
                if r >= c then
                    r = r - c
                    qq = qq + 1
                end
                if bits[i] == 1 then
                    r = r + rb
                    if r >= c then
                        r = r - c
                        qq = qq + 1
                    end
                end
            end
            return q + qq, r
        end

        local function pmod(k, m)
            return fmod(fmod(k, m) + m, m)
        end

        local fmt_cache = {}
        local function fmt_u32(k)
            local f = fmt_cache[k]
            if not f then
                f = '<' .. string.rep('I4', k)
                fmt_cache[k] = f
            end
            return f
        end

        local function unpack_u32(s, pos, n)
            local t, i = {}, 0
            while i < n do
                local k = n - i
                if k > 64 then
                    k = 64
                end
                local vals = {struct.unpack(fmt_u32(k), s, pos)}
                for x = 1, k do
                    t[i + x] = vals[x]
                end
                pos = vals[k + 1]
                i = i + k
            end
            return t
        end

        local function pack_u32(t, n)
            local parts, i = {}, 0
            while i < n do
                local k = n - i
                if k > 64 then
                    k = 64
                end
                parts[#parts + 1] = struct.pack(fmt_u32(k), unpack(t, i + 1, i + k))
                i = i + k
            end
            return table.concat(parts)
        end

        return {muldiv = muldiv, pmod = pmod, unpack_u32 = unpack_u32, pack_u32 = pack_u32}
    end

    local packed_helpers
    local function packed()
        if not packed_helpers then
            packed_helpers = packed_module()
        end
        return packed_helpers
    end

    -- sliding_window (window.c)
    local function slide_module()
        -- The packed helpers only when a block or a big product needs them.
        local function muldiv(a, b, c)
            local p = a * b
            if p < TWO53 then
                local r = fmod(p, c)
                return (p - r) / c, r
            end
            return packed().muldiv(a, b, c)
        end

        local function pmod(k, m)
            return fmod(fmod(k, m) + m, m)
        end

        local function decode(l, s, st)
            if l.prec == 1 then
                if s and #s == 15 then
                    local e, c1, c2 = struct.unpack('<I7I4I4', s)
                    st.exp, st.c = e, {c1, c2}
                else
                    st.c = {0, 0}
                end
            elseif s and #s == 7 + 4 * l.m then
                st.exp = struct.unpack('<I7', s)
                st.c = packed().unpack_u32(s, 8, l.m)
            end
            return st
        end

        local function encode(l, st)
            if l.prec == 1 then
                return struct.pack('<I7I4I4', st.exp, st.c[1], st.c[2])
            end
            if not st.c then
                return nil
            end
            for i = 1, l.m do
                if st.c[i] ~= 0 then
                    return struct.pack('<I7', st.exp) .. packed().pack_u32(st.c, l.m)
                end
            end
            return nil -- all zero: the same as no state
        end

        local function rotate_left(a, m, r)
            if r == 0 then
                return
            end
            local t = {}
            for i = 0, m - 1 do
                t[i + 1] = a[fmod(i + r, m) + 1]
            end
            for i = 1, m do
                a[i] = t[i]
            end
        end

        local function slide_view(l, st, now)
            local m = l.m
            local ctr
            if l.prec == 1 then
                ctr = {st.c[1], st.c[2]} -- the word's copy: changes are not kept
            else
                ctr = st.c -- the block: changes are kept, as in place
            end
            local j = idiv(now, l.sub)
            if st.exp <= now or ctr == nil then
                if ctr then
                    for i = 1, m do
                        ctr[i] = 0
                    end
                end
            else
                local last = idiv(st.exp, l.sub) - m
                if j < last then
                    rotate_left(ctr, m, fmod(last - j, m))
                    st.exp = (j + m) * l.sub
                    if l.prec == 1 then
                        st.c = {ctr[1], ctr[2]}
                    end
                    st.dirty = true
                    last = j
                end
                local k = last + 1
                while k <= j and k <= last + m do
                    ctr[fmod(k, m) + 1] = 0
                    k = k + 1
                end
            end
            local total, oldest = 0, 0
            if ctr then
                for i = 1, m do
                    total = total + ctr[i]
                end
                oldest = ctr[fmod(j + 1, m) + 1]
            end
            return {m = m, j = j, e = now - j * l.sub, ctr = ctr, oldest = oldest,
                    newest = total - oldest}
        end

        local function counter(w, k)
            if w.ctr == nil or k > w.j or k < w.j - (w.m - 1) then
                return 0
            end
            return w.ctr[pmod(k, w.m) + 1]
        end

        local function first_elapsed(p, k, s)
            if p == 0 then
                return 0
            end
            local a = k + 1
            if a > p then -- floor((a*s - 1)/p) >= s
                return 0
            end
            local q, r = muldiv(a, s, p)
            local span = r > 0 and q or q - 1
            return s - span
        end

        local function slide_retry(l, w, cost)
            local s = l.sub
            local now = w.j * s + w.e
            local oldest, newest = w.oldest, w.newest
            for step = 0, w.m - 1 do
                local i = w.j + step
                if newest + cost <= l.cap then
                    local e = first_elapsed(oldest, l.cap - cost - newest, s)
                    if step == 0 and e < w.e then
                        e = w.e
                    end
                    if e < s then
                        return i * s + e - now
                    end
                end
                local nxt = counter(w, i + 1 - l.prec)
                oldest = nxt
                newest = newest - nxt
            end
            return (w.j + w.m) * s - now
        end

        local function slide_reset(l, w, extra)
            local s = l.sub
            local now = w.j * s + w.e
            if extra > 0 then
                return (w.j + w.m) * s - now
            end
            for back = 0, w.m - 1 do
                if counter(w, w.j - back) ~= 0 then
                    return (w.j - back + w.m) * s - now
                end
            end
            return 0
        end

        local function slide_decide(l, st, now, cost)
            local v = st
            v.delay = 0
            local w = slide_view(l, st, now)
            local est = muldiv(w.oldest, l.sub - w.e, l.sub) + w.newest
            v.rem_now = sat_sub(l.cap, est)
            v.reset_now = slide_reset(l, w, 0)
            if cost <= l.cap and est <= l.cap - cost then
                v.allowed = true
                v.retry = 0
                v.rem_ch = l.cap - est - cost
                v.reset_ch = slide_reset(l, w, cost)
            else
                v.allowed = false
                v.retry = cost > l.cap and NEVER or slide_retry(l, w, cost)
                v.rem_ch, v.reset_ch = v.rem_now, v.reset_now
            end
            return v
        end

        local function slide_commit(l, st, now, cost)
            if l.prec > 1 and st.c == nil then -- the memory store's prepare: a zeroed block
                st.c = {}
                for i = 1, l.m do
                    st.c[i] = 0
                end
            end
            local w = slide_view(l, st, now)
            local at = fmod(w.j, w.m) + 1
            local c = w.ctr[at] + cost
            if c > U32_MAX then
                c = U32_MAX
            end
            w.ctr[at] = c
            st.exp = (w.j + w.m) * l.sub
            if l.prec == 1 then
                st.c = {w.ctr[1], w.ctr[2]}
            end
        end

        return {decode = decode, encode = encode, decide = slide_decide, commit = slide_commit,
                muldiv = muldiv}
    end


    -- sliding_log (sliding_log.c)
    local function log_module()

        local function decode(l, s, st)
            if s and #s >= 14 + l.w and fmod(#s - 14, l.w) == 0 then
                local d
                st.exp, d = struct.unpack('<I7I7', s)
                st.base = st.exp - d
                st.offs = string.sub(s, 15)
                st.n = (#s - 14) / l.w
            end
            return st
        end

        local function encode(l, st)
            if not st.offs or st.n == 0 then
                return nil -- an empty log: the same as no state
            end
            return struct.pack('<I7I7', st.exp, st.exp - st.base) .. st.offs
        end

        local function log_off(l, st, i)
            return (struct.unpack(l.ofmt, st.offs, i * l.w + 1))
        end

        local function log_age(l, st, i, now)
            return now - (st.base + log_off(l, st, i))
        end

        local function log_tidy(l, st, now)
            if not st.offs then
                return 0
            end
            if st.exp <= now then
                st.offs, st.n = '', 0
                return 0
            end
            local newest = st.exp - l.period
            if newest > now then -- the clock went back: the log moves back with it
                st.base = st.base - (newest - now)
                st.exp = now + l.period
                st.dirty = true
            end
            -- Entries are in time order: drop those with age >= period, i.e. with
            -- offset <= now - base - period.
            local lim = now - st.base - l.period
            local lo, hi = 0, st.n -- first entry with offset > lim is in [lo, hi]
            while lo < hi do
                local mid = idiv(lo + hi, 2)
                if log_off(l, st, mid) <= lim then
                    lo = mid + 1
                else
                    hi = mid
                end
            end
            if lo > 0 then
                st.offs = string.sub(st.offs, lo * l.w + 1)
                st.n = st.n - lo
            end
            return st.n
        end

        local function log_decide(l, st, now, cost)
            local v = st
            v.delay = 0
            local count = log_tidy(l, st, now)
            v.rem_now = sat_sub(l.cap, count)
            v.reset_now = count > 0 and st.exp - now or 0
            if cost <= l.cap and count <= l.cap - cost then
                v.allowed = true
                v.retry = 0
                v.rem_ch = l.cap - count - cost
                v.reset_ch = cost > 0 and l.period or v.reset_now
                return v
            end
            v.allowed = false
            v.rem_ch, v.reset_ch = v.rem_now, v.reset_now
            if cost > l.cap then
                v.retry = NEVER
            else
                v.retry = l.period - log_age(l, st, count + cost - l.cap - 1, now)
            end
            return v
        end

        local function log_commit(l, st, now, cost)
            log_tidy(l, st, now)
            if not st.offs then
                st.offs, st.n, st.base = '', 0, now
            end
            local push = cost < l.cap and cost or l.cap
            -- count_denied past the limit: the oldest entries give way
            local drop = st.n + push - l.cap
            if drop > 0 then
                if drop > st.n then
                    drop = st.n
                end
                st.offs = string.sub(st.offs, drop * l.w + 1)
                st.n = st.n - drop
            end
            if st.n == 0 then
                st.base = now
            elseif now - st.base > U32_MAX and l.w == 4 then
                -- Offsets are 32-bit: count them from the oldest entry again
                -- (younger than period < 2^32 us).
                local P = packed()
                local old = P.unpack_u32(st.offs, 1, st.n)
                local first = old[1]
                for i = 1, st.n do
                    old[i] = old[i] - first
                end
                st.offs = P.pack_u32(old, st.n)
                st.base = st.base + first
            end
            st.offs = st.offs .. string.rep(struct.pack(l.ofmt, now - st.base), push)
            st.n = st.n + push
            st.exp = now + l.period
        end

        return {decode = decode, encode = encode, decide = log_decide, commit = log_commit}
    end


    if kind == 2 then
        slide_m = slide_module()
        return slide_m
    end
    log_m = log_module()
    return log_m
end

-- ---- limits ------------------------------------------------------------------

-- The limits of a policy, 41 bytes each (script.c: put_limit). A limit of
-- the rate family, a fixed window or a sliding window of precision 1 is a
-- table of 8 fields (tau and dmax are computed where used): 9 would double
-- its size.
local function parse_limits(blob)
    local limits = {}
    for pos = 1, #blob, 41 do
        local b, nominal, cap, rate, period, prec, id =
            struct.unpack('<BI7I7I7I7I4c8', blob, pos)
        local kind = b % 16 -- b < 64: exact
        if kind == 2 and prec == 1 then
            kind = 4 -- sliding_window of precision 1: slide1_step
        end
        local l
        if kind < 2 or kind == 4 then
            l = {kind = kind, shaper = b % 32 >= 16, cd = b >= 32, nominal = nominal, cap = cap,
                 rate = rate, period = period, id = id}
        else
            l = {kind = kind, shaper = false, cd = b >= 32, nominal = nominal, cap = cap,
                 rate = rate, period = period, id = id, prec = prec, mod = module_of(kind),
                 sub = nil, m = nil, w = nil, ofmt = nil}
            if kind == 2 then
                l.sub = period / prec -- exact: precision divides period
                l.m = prec + 1
            else
                local wide = period >= 4294967296
                l.w = wide and 7 or 4
                l.ofmt = wide and '<I7' or '<I4'
            end
        end
        limits[#limits + 1] = l
    end
    return limits
end

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

-- Reads the states of `limits` from `key`, evaluates, writes the value back
-- when a state changed (without the states of limits no longer in the
-- policy) and sets the key to expire when every state has recovered.
-- Returns the decision: allowed, limited, limit, remaining, reset, retry
-- (NEVER: never), delay, index; with `reply`, puts the per-limit reports
-- in it from reply[9] on.
local function evaluate(key, limits, now, cost, peek, shadow, reply)
    local raw
    if cache then
        raw = cache[key]
    else
        raw = redis.call('GET', key)
    end
    local n = #limits
    local states = {}
    local all = true
    for i = 1, n do
        local l = limits[i]
        local old = nil
        if raw then
            old = find_field(raw, l.id)
        end
        local st = {exp = 0, word = 0, old = old, dirty = nil, touched = nil, c = nil, base = nil,
                    offs = nil, n = nil, allowed = false, delay = 0, retry = 0, rem_now = 0,
                    reset_now = 0, rem_ch = 0, reset_ch = 0}
        states[i] = st
        local kind = l.kind
        if kind == 0 then
            if old and #old == 14 then
                st.exp, st.word = struct.unpack('<I7I7', old)
            end
            rate_step(l, st, now, cost, false)
        elseif kind == 1 then
            if old and #old == 12 then
                st.exp, st.word = struct.unpack('<I7I5', old)
            end
            fixed_step(l, st, now, cost, false)
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
    end
    if not peek and cost > 0 then
        for i = 1, n do
            local l, st = limits[i], states[i]
            if all or l.cd then
                local kind = l.kind
                if kind == 0 then
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
                    elseif kind == 1 then
                        fixed_step(l, st, now, cost, false)
                    elseif kind == 4 then
                        slide1_step(l, st, now, cost, false)
                    else
                        l.mod.decide(l, st, now, cost)
                    end
                end
            end
        end
    end

    -- Write back: the whole value, when any state changed (the memory
    -- store would have written that slot or changed that block).
    local value, changed = '', false
    local maxexp = 0
    for i = 1, n do
        local l, st = limits[i], states[i]
        local old = st.old
        local new = nil
        if old or st.touched or st.dirty then -- a new state left alone stays unwritten
            local kind = l.kind
            if kind == 0 then
                new = struct.pack('<I7I7', st.exp, st.word)
            elseif kind == 1 then
                new = struct.pack('<I7I5', st.exp, st.word)
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
            -- Relative, so that a caller's clock that is not Redis's still
            -- gives each key the lifetime its states need.
            local ttl = 1
            if maxexp > now then
                ttl = ceil_div(maxexp - now, 1000)
            end
            redis.call('SET', key, value, 'PX', ttl)
            if cache then
                cache[key] = value
            end
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
    if all then
        return true, tolerated, limits[by + 1].nominal, remaining, reset, 0, delay, by
    end
    if shadow then
        return true, true, limits[by + 1].nominal, remaining, reset, 0, 0, by
    end
    return false, true, limits[by + 1].nominal, remaining, reset, retry, 0, by
end

-- One request: the reply of a single call, in `reply` when given (every
-- field is written). flags: 1 peek, 2 shadow, 4 elastic (then pool_key and
-- pool_limits are the pool's).
local function decide(key, limits, pool_key, pool_limits, now, cost, flags, reply)
    if not reply then
        if #limits == 1 then
            reply = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
        else
            reply = {0, 0, 0, 0, 0, 0, 0, 0}
        end
    end
    local peek = flags % 2 == 1 -- flags < 8: exact
    local allowed, limited, limit, remaining, reset, retry, delay, index =
        evaluate(key, limits, now, cost, peek, flags % 4 >= 2, reply)
    if flags >= 4 and not allowed then
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
    local pool_limits = nil
    if flags >= 4 then
        pool_limits = parse_limits(ARGV[5])
    end
    return decide(KEYS[1], parse_limits(ARGV[4]), KEYS[2], pool_limits, now, cost, flags)
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
local function one(key, li, pool_key, pi, cost, flags)
    local pool_limits = nil
    if flags >= 4 then
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
    return decide(key, limits, pool_key, pool_limits, now, cost, flags, reply)
end

-- The reply: one string, per request a status byte, then for 1 (decided)
-- the decision and its reports packed (script.c: REPLY_DECISION, _REPORT),
-- for 0 (failed) nothing more: thousands of integer replies would cost
-- Redis and the caller more than the decisions.
local formats = {}
local out = {}
local k = 1
for i = 1, #reqs / BATCH_BYTES do
    local li, pi, cost, flags = struct.unpack('<I2I2I7B', reqs, (i - 1) * BATCH_BYTES + 1)
    local key, pool_key = KEYS[k], nil
    k = k + 1
    if flags >= 4 then
        pool_key = KEYS[k]
        k = k + 1
    end
    local ok, r = pcall(one, key, li, pool_key, pi, cost, flags)
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
