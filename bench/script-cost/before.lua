-- bench/script-cost: the variant named by the file; see run.sh.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local now = redis.call('TIME')
  local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local last = tonumber(redis.call('GET', KEYS[2]) or '0')
  local fence = string.format('%.0f', math.max(last + 1, floor))
  redis.call('SET', KEYS[2], fence)
  redis.call('PTTL', KEYS[1])
  redis.call('DEL', KEYS[1])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
