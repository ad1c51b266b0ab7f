-- Purge a finished request and record it in the bounded Completed log, in one step.
-- KEYS[1] loc hash  KEYS[2] req hash  KEYS[3] source zset
-- KEYS[4] completed:<chain> zset (digest -> completion time)  KEYS[5] completed:<chain>:log hash
-- ARGV[1] digest  ARGV[2] expected location code  ARGV[3] now  ARGV[4] log entry JSON
-- ARGV[5] retention: most entries kept in the Completed log of this chain
-- Returns 1 when completed, 0 when the request was not at the expected location.
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[4])
local excess = redis.call('ZCARD', KEYS[4]) - tonumber(ARGV[5])
if excess > 0 then
  local oldest = redis.call('ZPOPMIN', KEYS[4], excess)
  for i = 1, #oldest, 2 do
    redis.call('HDEL', KEYS[5], oldest[i])
  end
end
return 1
