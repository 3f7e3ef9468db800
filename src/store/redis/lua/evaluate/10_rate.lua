-- ---- gcra, token_bucket, leaky_bucket (gcra.c) -----------------------------------

-- The longest wait a reservation may hold on a rate limit, us: an hour
-- (SL_MAX_WAIT), less when an hour of debt would take the arithmetic
-- below past 2^52 (with the debt and a charge on top, still under 2^53).
local function rate_wait_max(l)
    local room = 4503599627370496 - 3 * l.cap * l.period
    if room <= 0 then
        return 0
    end
    local w = idiv(room, l.rate)
    return w < 3600000000 and w or 3600000000
end

-- TAT = now + d/rate: the state's exp and fraction. A debt past dmax is
-- one only reservations leave: the state says it holds them (held), so
-- that lying that far ahead does not read as the clock going back.
local function rate_set(l, st, now, d, dmax)
    local rate = l.rate
    local whole = ceil_div(d, rate)
    st.exp = now + whole
    st.word = whole * rate - d
    st.held = d > dmax
end

-- State: exp, word = the fraction (units of g/rate us), held. Decides
-- (the verdict into st, and st.debt: the debt now) or, with `commit`,
-- charges `cost`.
local function rate_step(l, st, now, cost, commit)
    local rate, tau = l.rate, l.cap * l.period
    local dmax = l.cd and 2 * tau or tau
    -- debt_at(now): 0 when recovered; a state further ahead than dmax
    -- (or than a held state's reach) allows means the clock went back: it
    -- is set to dmax
    local debt = 0
    if st.exp > now then
        local most = dmax
        if st.held then
            local hold = tau + rate_wait_max(l) * rate
            if hold > most then
                most = hold
            end
        end
        local ahead = st.exp - now
        local valid = false
        if ahead <= idiv(most, rate) + 1 then
            local frac = st.word
            if frac >= rate then
                frac = rate - 1
            end
            debt = ahead * rate - frac
            valid = debt <= most
        end
        if not valid then
            debt = dmax
            rate_set(l, st, now, dmax, dmax)
            st.dirty = true
        end
    end
    st.debt = debt
    if commit then
        -- debt that reservations hold is never cut back to dmax
        local d = debt
        if d <= dmax then
            d = debt + (cost > l.cap and dmax or cost * l.period)
            if d > dmax then
                d = dmax
            end
        end
        rate_set(l, st, now, d, dmax)
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

-- ---- reservations (gcra.c: sl__rate_reserve, sl__rate_reserve_commit) -------------

-- Until the request's place in the schedule (a shaper's: until the debt
-- before it has drained).
local function rate_own_delay(l, debt, inc, tau)
    if l.shaper then
        return ceil_div(debt, l.rate)
    end
    if debt + inc > tau then
        return ceil_div(debt + inc - tau, l.rate)
    end
    return 0
end

-- After rate_step decided: a request denied now passes when its place
-- comes within max_wait (and the limit's reach).
local function rate_reserve(l, st, cost, max_wait)
    if st.allowed or cost > l.cap then
        return
    end
    local rate, tau = l.rate, l.cap * l.period
    local debt, inc = st.debt, cost * l.period
    local wait = rate_wait_max(l)
    if max_wait < wait then
        wait = max_wait
    end
    local over = debt + inc - tau - wait * rate
    if over > 0 then
        st.retry = ceil_div(over, rate) -- until this wait would be enough
        return
    end
    st.allowed = true
    st.retry = 0
    st.delay = rate_own_delay(l, debt, inc, tau)
    st.rem_ch = 0
    st.reset_ch = ceil_div(debt + inc, rate)
end

-- Charges a reservation decided at now for a request that runs at `at`:
-- a limit whose own place is earlier is charged as if it arrived at `at`.
local function rate_reserve_commit(l, st, now, at, cost)
    local rate, tau = l.rate, l.cap * l.period
    local debt, inc = st.debt, cost * l.period
    local common = at - now
    if common > rate_own_delay(l, debt, inc, tau) and common * rate > debt then
        debt = common * rate
    end
    rate_set(l, st, now, debt + inc, l.cd and 2 * tau or tau)
end
