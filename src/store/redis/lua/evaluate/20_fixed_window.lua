-- ---- fixed_window (window.c) --------------------------------------------------

-- The longest wait a reservation may hold on a fixed window (SL_MAX_WAIT).
local FIXED_WAIT_MAX = 3600000000

-- fixed_view(): the count and the end of the window the request falls in,
-- and whether reservations hold later windows (ahead: this one and every
-- one before the last, which ends at fend, are full). A stored window that
-- starts after now means the clock went back, unless reservations hold
-- it within their reach: the count moves to the window of now.
local function fixed_view(l, st, now)
    local period = l.period
    local fend = (idiv(now, period) + 1) * period
    if st.exp <= now then
        return 0, fend, false
    end
    local ahead = false
    if st.exp > fend then
        if st.held and st.exp <= (idiv(now + FIXED_WAIT_MAX, period) + 1) * period then
            ahead = true
        else
            st.exp = fend
            st.dirty = true
        end
    end
    return st.word, st.exp, ahead
end

-- State: exp = the window's end, word = the count, held.
local function fixed_step(l, st, now, cost, commit)
    local cap, period = l.cap, l.period
    local count, fend, ahead = fixed_view(l, st, now)
    if commit then
        st.exp = fend
        -- Any count above capacity denies every cost alike: keep it small.
        count = count + cost
        if count > cap + 1 then
            count = cap + 1
        end
        st.word = count
        st.held = ahead
        return
    end
    st.delay = 0
    if ahead then
        st.allowed = false
        st.rem_now, st.rem_ch = 0, 0
        st.reset_now, st.reset_ch = fend - now, fend - now
        if cost > cap then
            st.retry = NEVER
        elseif count <= cap - cost then -- the last held window has room
            st.retry = fend - period - now
        else
            st.retry = fend - now
        end
        return
    end
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

-- ---- reservations (window.c: sl__fixed_reserve, sl__fixed_reserve_commit) ---------

-- After fixed_step decided: the request runs in the last window held (or
-- now's) if it has room, else in the one after it, if that opens within
-- max_wait.
local function fixed_reserve(l, st, now, cost, max_wait)
    local cap, period = l.cap, l.period
    if st.allowed or cost > cap then
        return
    end
    local count, fend, ahead = fixed_view(l, st, now)
    local start = fend
    if ahead and count <= cap - cost then
        start = fend - period
    end
    local wait = max_wait < FIXED_WAIT_MAX and max_wait or FIXED_WAIT_MAX
    if start - now > wait then
        st.retry = start - now - wait -- until this wait would be enough
        return
    end
    st.allowed = true
    st.retry = 0
    st.delay = start - now
    st.rem_ch = 0
    st.reset_ch = start + period - now
end

-- Charges the window the request runs in (at); the windows skipped before
-- it count as full: conservative.
local function fixed_reserve_commit(l, st, now, at, cost)
    local period = l.period
    local count, fend = fixed_view(l, st, now)
    local end_at = (idiv(at, period) + 1) * period
    if end_at == fend then
        count = count + cost
    else
        count = cost
    end
    st.exp = end_at
    st.word = count
    st.held = end_at > (idiv(now, period) + 1) * period
end
