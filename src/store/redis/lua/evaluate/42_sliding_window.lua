    -- (inside module_of(), from 40_modules_open.lua: the sliding_window module)
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


