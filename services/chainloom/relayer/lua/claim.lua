-- A worker claims up to N due requests of its chain from Incoming into its own In-Work.
-- KEYS[1] lease:<worker>  KEYS[2] incoming:<chain>  KEYS[3] inwork:<worker>
-- KEYS[4] loc hash        KEYS[5] req hash          KEYS[6] vaa hash
-- ARGV[1] lease token  ARGV[2] now  ARGV[3] limit  ARGV[4] location code 'W:<worker>'
-- ARGV[5] lease ttl in ms (renewed by the claim)
-- Returns state JSON and VAA of each claimed request, flattened; an error reply LEASE_LOST
-- when the lease is not ours.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('LEASE_LOST worker lease expired or held by another instance')
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
if #ids == 0 then
  return {}
end
local scored, located = {}, {}
for i, digest in ipairs(ids) do
  scored[2 * i - 1] = ARGV[2]
  scored[2 * i] = digest
  located[2 * i - 1] = digest
  located[2 * i] = ARGV[4]
end
redis.call('ZREM', KEYS[2], unpack(ids))
redis.call('ZADD', KEYS[3], unpack(scored))
redis.call('HSET', KEYS[4], unpack(located))
local states = redis.call('HMGET', KEYS[5], unpack(ids))
local vaas = redis.call('HMGET', KEYS[6], unpack(ids))
local out = {}
for i = 1, #ids do
  out[2 * i - 1] = states[i]
  out[2 * i] = vaas[i]
end
return out
