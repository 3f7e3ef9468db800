-- ---- refunds (refund.c) ---------------------------------------------------------------

-- The waiter of a reservation left before its moment: gives back `cost`
-- reserved for the moment `at` from each limit whose state still ends
-- where that reservation left it (exps[i]), exactly as sl__policy_refund
-- does in the memory store: the rate family takes the reservation's
-- increment off its schedule, a fixed window uncounts it while that
-- window is the last it holds; anything else (a later charge, the moment
-- passed, another algorithm) keeps the charge. Returns the limits changed,
-- bit i-1 for limit i; writes the value back when one did.
local function refund(key, limits, now, cost, at, exps)
    local raw = redis.call('GET', key)
    if not raw or now >= at or cost == 0 then
        return 0
    end
    local n = #limits
    local states = {}
    local changed, bit = 0, 1
    for i = 1, n do
        local l = limits[i]
        local old = find_field(raw, l.id)
        local st = {exp = 0, word = 0, old = old, keep = true, held = false}
        states[i] = st
        local kind, size = l.kind, old and #old or 0
        if size >= 7 then -- every state starts with its exp: the key's lifetime
            st.exp = struct.unpack('<I7', old)
        end
        local rate_state = kind == 0 and (size == 14 or size == 15)
        local fixed_state = kind == 1 and (size == 12 or size == 13)
        if (rate_state or fixed_state) and cost <= l.cap then
            if rate_state then
                st.exp, st.word = struct.unpack('<I7I7', old)
            else
                st.exp, st.word = struct.unpack('<I7I5', old)
            end
            st.held = size == 15 or size == 13
            local done = false
            if st.exp <= now then
                done = false -- recovered: its moment came, as far as the limit knows
            elseif rate_state then
                local rate, period = l.rate, l.period
                local dmax = l.cd and 2 * l.cap * period or l.cap * period
                local frac, ahead = st.word, st.exp - now
                if st.exp == exps[i] and frac < rate and ahead <= 3600000000 + idiv(dmax, rate) + 1 then
                    local debt, inc = ahead * rate - frac, cost * period
                    rate_set(l, st, now, debt > inc and debt - inc or 0, dmax)
                    done = true
                end
            else
                local count = st.word
                if st.exp == (idiv(at, l.period) + 1) * l.period and count >= cost then
                    st.word = count - cost
                    done = true
                end
            end
            if done then
                st.keep = nil
                st.touched = true
                changed = changed + bit
            end
        end
        bit = bit * 2
    end
    if changed > 0 then
        write_back(key, limits, states, now)
    end
    return changed
end
