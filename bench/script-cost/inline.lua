-- bench/script-cost: the variant named by the file; see run.sh. nextFence written inline.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = redis.call('INCR', KEYS[2])
  if fence == 1 then
    local now = redis.call('TIME')
    fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
    redis.call('SET', KEYS[2], string.format('%.0f', fence))
  end
  redis.call('PTTL', KEYS[1])
  redis.call('DEL', KEYS[1])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
