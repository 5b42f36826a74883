-- Give back the permits of one semaphore lease.
-- KEYS[1]  holders sorted set
-- KEYS[2]  release counter (INCR-ed so that waiters in other processes hear of it; expires
--          IDLE_MS after its last change)
-- ARGV[1]  owner token
-- ARGV[2]  permits held
-- Returns  1 when every permit was still held, 0 otherwise.
--- @include "idle"
local removed = 0
for i = 1, tonumber(ARGV[2]) do
  removed = removed + redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. i)
end
if removed > 0 then
  redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], IDLE_MS)
end
if removed == tonumber(ARGV[2]) then
  return 1
end
return 0
