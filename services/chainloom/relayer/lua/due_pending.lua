-- Take up to N Pending Confirmation requests whose finality check is due, and push their next
-- check into the future so that other workers of the chain do not check them at the same time.
-- KEYS[1] pending:<chain> zset  KEYS[2] req hash  KEYS[3] vaa hash
-- ARGV[1] now  ARGV[2] limit  ARGV[3] next check time
-- Returns state JSON and VAA of each request, flattened.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then
  return {}
end
local scored = {}
for i, digest in ipairs(ids) do
  scored[2 * i - 1] = ARGV[3]
  scored[2 * i] = digest
end
redis.call('ZADD', KEYS[1], 'XX', unpack(scored))
local states = redis.call('HMGET', KEYS[2], unpack(ids))
local vaas = redis.call('HMGET', KEYS[3], unpack(ids))
local out = {}
for i = 1, #ids do
  out[2 * i - 1] = states[i]
  out[2 * i] = vaas[i]
end
return out
