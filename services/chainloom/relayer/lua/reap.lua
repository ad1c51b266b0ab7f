-- Return a dead worker's In-Work requests to Incoming, if its lease has really expired.
-- KEYS[1] lease:<worker>  KEYS[2] inwork:<worker>  KEYS[3] incoming:<chain>  KEYS[4] loc hash
-- KEYS[5] workers hash
-- ARGV[1] location code 'W:<worker>'  ARGV[2] now  ARGV[3] worker id
-- Returns the number of requests returned, or -1 when the worker is alive (lease present).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -1
end
local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
local returned = 0
for _, digest in ipairs(ids) do
  if redis.call('HGET', KEYS[4], digest) == ARGV[1] then
    redis.call('ZADD', KEYS[3], ARGV[2], digest)
    redis.call('HSET', KEYS[4], digest, 'I')
    returned = returned + 1
  end
end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[5], ARGV[3])
return returned
