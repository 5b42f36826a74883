-- The notification canary: proves that keys read inside a script are tracked for the caller, for
-- every read command the lock scripts end with to arm tracking (their header comments say which).
-- KEYS[1]  a key the script only writes: armed too under Redis <= 7.0's rule (every declared
--          key), not under the read-keys rule of Redis >= 7.2 and Valkey, so its push tells
--          the two apart
-- KEYS[2]  a string read with GET       KEYS[3]  a string read with PTTL
-- KEYS[4]  a string read with EXISTS    KEYS[5]  a hash read with HGET
-- KEYS[6]  a sorted set read with ZRANGE
-- KEYS[7]  a stream read with XRANGE    KEYS[8]  a stream read with XREVRANGE
-- ARGV[1]  ttl in ms: the keys vanish by themselves if the proof's DEL never comes
-- Returns  OK. The prover then DELs every key from another connection, which pushes.
local ttl = ARGV[1]
for i = 1, 4 do
  redis.call('SET', KEYS[i], '1', 'PX', ttl)
end
redis.call('HSET', KEYS[5], 'f', '1')
redis.call('ZADD', KEYS[6], 1, 'm')
redis.call('XADD', KEYS[7], '*', 'f', '1')
redis.call('XADD', KEYS[8], '*', 'f', '1')
for i = 5, 8 do
  redis.call('PEXPIRE', KEYS[i], ttl)
end
redis.call('GET', KEYS[2])
redis.call('PTTL', KEYS[3])
redis.call('EXISTS', KEYS[4])
redis.call('HGET', KEYS[5], 'f')
redis.call('ZRANGE', KEYS[6], 0, 0)
redis.call('XRANGE', KEYS[7], '-', '+', 'COUNT', 1)
redis.call('XREVRANGE', KEYS[8], '+', '-', 'COUNT', 1)
return 'OK'
