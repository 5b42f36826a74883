-- A waiting writer gives up: remove its registration so that readers may enter again (the
-- registered ones by a grant, includes/grant-readers.lua). When a direct grant made it the
-- writer meanwhile, it frees the write lease and grants it on as a release would.
-- KEYS[1]  waiting writers sorted set
-- KEYS[2]  writer key              (KEYS[2..8] optional: a writer registered for direct grants)
-- KEYS[3]  readers sorted set
-- KEYS[4]  fencing counter
-- KEYS[5]  waiting writers' records
-- KEYS[6]  waiting readers' queue
-- KEYS[7]  waiting readers' records
-- KEYS[8]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  writer token
-- Returns  2 when a grant had made it the writer (freed, granted on), 1 when it was registered,
--          0 otherwise.
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if not KEYS[5] then
  return removed
end
redis.call('HDEL', KEYS[5], ARGV[1])
--- @include "grant-writer"
--- @include "grant-readers"
FENCE_MARK = KEYS[8]
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  -- The last waiting writer gone: registered readers kept out by it enter.
  if removed == 1 and redis.call('EXISTS', KEYS[7]) == 1 then
    grantReaders(KEYS[2], KEYS[3], KEYS[1], KEYS[4], KEYS[6], KEYS[7])
  end
  return removed
end
redis.call('DEL', KEYS[2])
handOnWrite(KEYS[2], KEYS[3], KEYS[1], KEYS[4], KEYS[5])
grantReaders(KEYS[2], KEYS[3], KEYS[1], KEYS[4], KEYS[6], KEYS[7])
return 2
