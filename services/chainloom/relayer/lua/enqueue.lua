-- Enqueue requests, each unless its digest is anywhere already. The whole call is one atomic
-- step; every request in it is decided on its own (a copy later in the same call is refused).
-- KEYS[1] req hash (digest -> request state JSON)   KEYS[2] loc hash (digest -> location code)
-- KEYS[3] chains set                                KEYS[4] vaa hash (digest -> signed VAA)
-- then per request i (from 0): KEYS[5 + 2i] completed:<chain> zset, KEYS[6 + 2i] incoming:<chain>
-- ARGV per request i (5 each): digest, state JSON, incoming score (ready time), chain, VAA
-- Returns per request '' when queued, else the location code where it already is
-- ('I', 'W:<worker>', 'P', 'F', or 'C' for the Completed log).
local n = #ARGV / 5
if n == 0 then
  return {}
end
local digests = {}
for i = 0, n - 1 do
  digests[i + 1] = ARGV[i * 5 + 1]
end
local locations = redis.call('HMGET', KEYS[2], unpack(digests))
local out, queued = {}, {}
local states, vaas, locs, chains, incoming = {}, {}, {}, {}, {}
for i = 0, n - 1 do
  local a = i * 5
  local digest = ARGV[a + 1]
  if locations[i + 1] then
    out[i + 1] = locations[i + 1]
  elseif queued[digest] then
    out[i + 1] = 'I'
  elseif redis.call('ZSCORE', KEYS[5 + 2 * i], digest) then
    out[i + 1] = 'C'
  else
    queued[digest] = true
    states[#states + 1] = digest
    states[#states + 1] = ARGV[a + 2]
    vaas[#vaas + 1] = digest
    vaas[#vaas + 1] = ARGV[a + 5]
    locs[#locs + 1] = digest
    locs[#locs + 1] = 'I'
    chains[ARGV[a + 4]] = true
    local key = KEYS[6 + 2 * i]
    local list = incoming[key]
    if not list then
      list = {}
      incoming[key] = list
    end
    list[#list + 1] = ARGV[a + 3]
    list[#list + 1] = digest
    out[i + 1] = ''
  end
end
if #states > 0 then
  redis.call('HSET', KEYS[1], unpack(states))
  redis.call('HSET', KEYS[4], unpack(vaas))
  redis.call('HSET', KEYS[2], unpack(locs))
  for key, list in pairs(incoming) do
    redis.call('ZADD', key, unpack(list))
  end
  for chain in pairs(chains) do
    redis.call('SADD', KEYS[3], chain)
  end
end
return out
