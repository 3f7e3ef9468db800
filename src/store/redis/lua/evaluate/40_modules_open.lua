-- ---- sliding_window, sliding_log: modules built on first use ----------------------

-- A module has decode (the state as the memory store's cell: exp and the
-- inline word or the block; a value of the wrong shape, never written by
-- this script, reads as fresh), encode (nil: the same as no state), decide
-- and commit.
local slide_m, log_m

-- Everything it uses is its own (each upvalue of a closure costs at every
-- call); slide_m and log_m keep what it built for the rest of the call.
function module_of(kind)
    if kind == 2 and slide_m then
        return slide_m
    elseif kind == 3 and log_m then
        return log_m
    end
    local fmod = math.fmod
    local TWO53 = 9007199254740992
    local U32_MAX = 4294967295
    local NEVER = math.huge

    local function idiv(a, b)
        return (a - fmod(a, b)) / b
    end

    local function sat_sub(a, b)
        if a > b then
            return a - b
        end
        return 0
    end

