    -- (inside module_of(), from 40_modules_open.lua: the sliding_log module)
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


