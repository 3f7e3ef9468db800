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

