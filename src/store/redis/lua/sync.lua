-- sync.lua -- write-back mode: compare-and-sets of keys' shared states,
-- several keys (of one Cluster slot) per call.
--
-- Daemons merge in C (src/store/cells.c) and keep Redis a plain holder of
-- bytes; this script only makes each write conditional, so that two
-- daemons merging onto the same state cannot both win.
--
-- KEYS[i]        the i-th state: an 8-byte version, then the state's bytes
-- ARGV[4i-3]     the version the caller merged onto, "" when it found no key
-- ARGV[4i-2]     the new version: 8 bytes the caller made up (random, so
--                that a key that expired and came back never matches an
--                old version)
-- ARGV[4i-1]     the merged state; "" when nothing in it is live (the key goes)
-- ARGV[4i]       its time to live, ms
--
-- Reply: per key, {1} when written; {0, value} when the key holds another
-- version (value: the whole current value, "" when there is none).

local out = {}
for i = 1, #KEYS do
    local a = 4 * (i - 1)
    local cur = redis.call('GET', KEYS[i])
    local version = cur and string.sub(cur, 1, 8) or ''
    if version ~= ARGV[a + 1] then
        out[i] = {0, cur or ''}
    else
        if ARGV[a + 3] == '' then
            redis.call('DEL', KEYS[i])
        else
            redis.call('SET', KEYS[i], ARGV[a + 2] .. ARGV[a + 3], 'PX', ARGV[a + 4])
        end
        out[i] = {1}
    end
end
return out
