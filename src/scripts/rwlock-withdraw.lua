-- A waiting writer gives up: remove its registration so that readers may enter again.
-- KEYS[1]  waiting writers sorted set
-- ARGV[1]  writer token
-- Returns  1 when it was registered, 0 otherwise.
return redis.call('ZREM', KEYS[1], ARGV[1])
