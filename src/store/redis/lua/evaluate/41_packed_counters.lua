    -- (inside module_of(), from 40_modules_open.lua: packed counters and big products)
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

