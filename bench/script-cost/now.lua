-- bench/script-cost: the variant named by the file; see run.sh.
--- @include "next-fence"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = nextFence(KEYS[2])
  redis.call('PTTL', KEYS[1])
  redis.call('DEL', KEYS[1])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
