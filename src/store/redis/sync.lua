-- sync.lua -- write-back mode: a compare-and-set of one key's shared state.
--
-- Daemons merge in C (src/store/cells.c) and keep Redis a plain holder of
-- bytes; this script only makes the write conditional, so that two daemons
-- merging onto the same state cannot both win.
--
-- KEYS[1]  the state: an 8-byte version, then the state's bytes
-- ARGV[1]  the version the caller merged onto, "" when it found no key
-- ARGV[2]  the new version: 8 bytes the caller made up (random, so that a
--          key that expired and came back never matches an old version)
-- ARGV[3]  the merged state; "" when nothing in it is live (the key goes)
-- ARGV[4]  its time to live, ms
--
-- Reply: {1} when written; {0, value} when the key holds another version
-- (value: the whole current value, "" when there is none).

local cur = redis.call('GET', KEYS[1])
local version = cur and string.sub(cur, 1, 8) or ''
if version ~= ARGV[1] then
    return {0, cur or ''}
end
if ARGV[3] == '' then
    redis.call('DEL', KEYS[1])
else
    redis.call('SET', KEYS[1], ARGV[2] .. ARGV[3], 'PX', ARGV[4])
end
return {1}
