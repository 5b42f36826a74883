-- bench/script-cost: the variant named by the file; see run.sh.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('DEL', KEYS[1])
  return {1, 0}
end
return {0, redis.call('PTTL', KEYS[1])}
