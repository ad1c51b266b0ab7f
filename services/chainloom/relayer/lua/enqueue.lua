-- Enqueue requests, each unless its digest is anywhere already. The whole call is one atomic
-- step; every request in it is decided on its own (a copy later in the same call is refused).
-- KEYS[1] req hash (digest -> request state JSON)   KEYS[2] loc hash (digest -> location code)
-- KEYS[3] chains set                                KEYS[4] vaa hash (digest -> signed VAA)
-- then per request i (from 0): KEYS[5 + 2i] completed:<chain> zset, KEYS[6 + 2i] incoming:<chain>
-- ARGV per request i (5 each): digest, state JSON, incoming score (ready time), chain, VAA
-- Returns per request '' when queued, else the location code where it already is
-- ('I', 'W:<worker>', 'P', 'F', or 'C' for the Completed log).
local out = {}
for i = 0, #ARGV / 5 - 1 do
  local a = i * 5
  local digest = ARGV[a + 1]
  local where = redis.call('HGET', KEYS[2], digest)
  if where then
    out[i + 1] = where
  elseif redis.call('ZSCORE', KEYS[5 + 2 * i], digest) then
    out[i + 1] = 'C'
  else
    redis.call('HSET', KEYS[1], digest, ARGV[a + 2])
    redis.call('HSET', KEYS[4], digest, ARGV[a + 5])
    redis.call('HSET', KEYS[2], digest, 'I')
    redis.call('ZADD', KEYS[6 + 2 * i], ARGV[a + 3], digest)
    redis.call('SADD', KEYS[3], ARGV[a + 4])
    out[i + 1] = ''
  end
end
return out
