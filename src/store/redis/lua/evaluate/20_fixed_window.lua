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

