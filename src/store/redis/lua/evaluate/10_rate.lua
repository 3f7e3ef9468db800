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

