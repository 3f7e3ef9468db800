-- evaluate.lua -- one policy evaluation, or a batch of them, atomically, in
-- Redis: the exact counterpart of sl__policy_evaluate() over the memory
-- store (and, for elastic policies, the borrowing from the pool that
-- limiter.c does).
--
-- Lua numbers are doubles: every integer here stays below 2^53, which
-- sl__redis_policy_supported() guarantees for the policies it lets through
-- (script.c); products that could pass it (sub-window weights) go through
-- muldiv(). Divisions are exact: idiv() and ceil_div() use fmod, which never
-- rounds. Time is in microseconds.
--
-- KEYS[1]  the key's states: a string of records, one per limit: its 8-byte
--          id, the length of the state (1 byte, or 255 and 4 bytes), the
--          state. Smaller than a hash (measured in docs/distributed.md), and
--          one SET writes it with its expiry (60_policy.lua: set_value).
-- KEYS[2]  elastic only: the policy's pool, same layout
-- ARGV[1]  now (us since the epoch), or "" for the server's TIME
-- ARGV[2]  cost (clamped below 2^52 by the caller: larger costs all behave alike)
-- ARGV[3]  flags: 1 peek, 2 shadow, 4 elastic, 8 a reservation
-- ARGV[4]  the limits, 41 bytes each (script.c: put_limit)
-- ARGV[5]  elastic only: the pool's limit ("" for others when ARGV[6] follows)
-- ARGV[6]  a reservation only: its max_wait, us (at most SL_MAX_WAIT)
-- ARGV[7]  a reservation only: the earliest it may run, us (0 .. max_wait);
--          with flag 1 (peek) a reservation says where its place is and
--          charges nothing
--
-- Reply: allowed, limited, limit, remaining, reset_after, retry_after,
-- delay, limit_index, then per limit allowed, limit, remaining, reset_after,
-- retry_after. retry_after -1 means never.
--
-- A batch (ARGV[2] is "b"; script.c: sl__redis_build_evaluate_batch):
-- KEYS     each request's key in order, each followed by its pool key
--          when the request is elastic
-- ARGV[1]  now, as above, for every request
-- ARGV[3]  the requests, 20 bytes each: I2 the ARGV index of its limits,
--          I2 that of its pool's limit (0: none), I7 cost, B flags,
--          I4 max_wait and I4 not_before (us, read with flag 8)
-- ARGV[4.. the limits of each distinct policy (and of its pool)
-- Reply: one string; per request a status byte, then for 1 (decided) the
-- reply above packed as '<BBI7I7I7i8I7i2' .. per limit 'BI7I7I7i8', for 2
-- (decided, and an admitted reservation holds a place for later) the same
-- then I7 when it runs and per limit I7 where its state ended (what a
-- refund needs), for 3 to 6 (rate_one's decision of a one-limit policy:
-- 3, + 1 allowed, + 2 limited) '<I7I7i8' remaining, reset and the delay
-- (allowed) or the retry (denied, -1 never), for 0 (failed inside the
-- script, the others still decided) nothing.
--
-- A refund (ARGV[2] is "r"; script.c: sl__redis_build_refund): KEYS[1] the
-- key, ARGV[1] now, ARGV[3] the limits, ARGV[4] I7 cost, I7 when the place
-- was, per limit I7 where its state ended. Reply: the limits changed, bit
-- i for limit i (65_refund.lua).
--
-- State values (little-endian; exp = when the state has recovered):
--   rate           I7 exp, I7 frac (units of g/rate us, g = gcd(rate, period))
--   fixed_window   I7 exp, I5 count (kept at most capacity + 1)
--   either, holding reservations (sl_reserve; the memory store's SL__HELD):
--                  the same and one byte 1, so that it may lie as far ahead
--                  as a reservation reaches without reading as the clock
--                  gone back
--   sliding p=1    I7 exp, I4 I4 the two counters
--   sliding p=N    I7 exp, (N+1) x I4 counters; all zero = no record
--   sliding_log    I7 exp, I7 d (base = exp - d), then one offset from base
--                  per admitted unit, oldest first: I4 when period < 2^32,
--                  else I7; empty = no record
-- The value is rewritten exactly when the memory store would change a slot
-- or a block, so both stores see the same states whatever the clock does;
-- records of limits no longer in the policy go at that write.
--
-- Built from src/store/redis/lua/evaluate/*.lua, joined in name order by
-- scripts/embed.cmake: one file per algorithm, this one first. The parts
-- 41 to 49 are the body of module_of(), opened in 40_modules_open.lua.

local fmod = math.fmod
local MAX_TIME = 4503599627370496 -- 2^52: script.c clamps to it too
local NEVER = math.huge
local BATCH_BYTES = 20
-- Limit kinds (written as literals below, as are the 41 bytes of a limit:
-- every upvalue of a closure costs at every call): 0 rate family,
-- 1 fixed_window, 2 sliding_window, 3 sliding_log, 4 sliding_window of
-- precision 1 (2 on the wire).

-- Redis runs the whole script body at every call, and a closure or a table
-- costs about as much as the arithmetic of a decision: the common
-- algorithms are plain functions, the rest are built on first use, and
-- each limit's state and verdict share one table sized once.

-- floor(a / b) for a >= 0, b > 0.
local function idiv(a, b)
    return (a - fmod(a, b)) / b
end

-- ceil(a / b) for a >= 0, b > 0.
local function ceil_div(a, b)
    local r = fmod(a, b)
    local q = (a - r) / b
    if r ~= 0 then
        q = q + 1
    end
    return q
end

