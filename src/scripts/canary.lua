-- The notification canary: proves that a key read inside a script is tracked for the caller.
-- KEYS[1]  a key the script writes, then reads
-- KEYS[2]  a key the script only writes: armed too under Redis <= 7.0's rule (every declared
--          key), not under the read-keys rule of Redis >= 7.2 and Valkey, so its push tells
--          the two apart
-- ARGV[1]  ttl in ms: the keys vanish by themselves if the proof's DEL never comes
-- Returns  OK. The prover then DELs both keys from another connection, which pushes.
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
redis.call('GET', KEYS[1])
return 'OK'
