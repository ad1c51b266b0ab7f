-- Move one request between tables if, and only if, it is where the caller expects it.
-- KEYS[1] loc hash  KEYS[2] req hash  KEYS[3] source zset  KEYS[4] destination zset
-- ARGV[1] digest  ARGV[2] expected location code  ARGV[3] new location code
-- ARGV[4] destination score  ARGV[5] new request JSON ('' keeps the stored one)
-- Returns 1 when moved, 0 when the request was not at the expected location (nothing changes).
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[5])
end
return 1
