-- Take up to N Pending Confirmation requests whose finality check is due, and push their next
-- check into the future so that other workers of the chain do not check them at the same time.
-- KEYS[1] pending:<chain> zset  KEYS[2] req hash  KEYS[3] vaa hash
-- ARGV[1] now  ARGV[2] limit  ARGV[3] next check time
-- Returns state JSON and VAA of each request, flattened.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, digest in ipairs(ids) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], digest)
  out[#out + 1] = redis.call('HGET', KEYS[2], digest)
  out[#out + 1] = redis.call('HGET', KEYS[3], digest)
end
return out
