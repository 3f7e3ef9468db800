-- ---- limits ------------------------------------------------------------------

-- The limits of a policy, 41 bytes each (script.c: put_limit). A limit of
-- the rate family, a fixed window or a sliding window of precision 1 is a
-- table of 9 fields (tau and dmax are computed where used), built once per
-- policy per call.
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
            -- pre: a lone rate state's record head (id, length 14), for rate_one
            l = {kind = kind, shaper = b % 32 >= 16, cd = b >= 32, nominal = nominal, cap = cap,
                 rate = rate, period = period, id = id, pre = kind == 0 and id .. '\14' or nil}
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

