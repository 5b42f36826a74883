-- A waiting writer gives up: remove its registration so that readers may enter again. When a
-- direct grant made it the writer meanwhile, it frees the write lease and grants it on as a
-- release would (includes/grant-writer.lua).
-- KEYS[1]  waiting writers sorted set
-- KEYS[2]  writer key              (KEYS[2..5] optional: a writer registered for direct grants)
-- KEYS[3]  readers sorted set
-- KEYS[4]  fencing counter
-- KEYS[5]  waiting writers' records
-- ARGV[1]  writer token
-- Returns  2 when a grant had made it the writer (freed, granted on), 1 when it was registered,
--          0 otherwise.
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if not KEYS[5] then
  return removed
end
redis.call('HDEL', KEYS[5], ARGV[1])
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return removed
end
redis.call('DEL', KEYS[2])
--- @include "grant-writer"
handOnWrite(KEYS[2], KEYS[3], KEYS[1], KEYS[4], KEYS[5])
return 2
