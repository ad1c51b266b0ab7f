-- Apply moves, each if and only if its request is where the caller believes it is.
-- The whole call is one atomic step; each move is decided on its own.
-- KEYS[1] loc hash  KEYS[2] req hash  KEYS[3] vaa hash
-- then per move i (from 0): KEYS[4 + 3i] source zset, KEYS[5 + 3i] destination zset,
--   KEYS[6 + 3i] Completed log hash of the destination chain (for 'C'; else the destination)
-- ARGV[1] now  ARGV[2] retention (most entries kept per chain in the Completed log)
-- ARGV per move i (6 each, from ARGV[3]): op, digest, expected location code,
--   new location code, destination score, payload
--   op 'M' (move): payload is the new state JSON ('' keeps the stored one)
--   op 'C' (complete): purge the request; payload is its Completed log entry (JSON)
-- Returns per move 1 when applied, 0 when the request was not at the expected location.
local out = {}
local retention = tonumber(ARGV[2])
for i = 0, (#ARGV - 2) / 6 - 1 do
  local a = 2 + i * 6
  local op, digest = ARGV[a + 1], ARGV[a + 2]
  local source, destination = KEYS[4 + 3 * i], KEYS[5 + 3 * i]
  if redis.call('HGET', KEYS[1], digest) ~= ARGV[a + 3] then
    out[i + 1] = 0
  elseif op == 'C' then
    redis.call('ZREM', source, digest)
    redis.call('HDEL', KEYS[1], digest)
    redis.call('HDEL', KEYS[2], digest)
    redis.call('HDEL', KEYS[3], digest)
    redis.call('ZADD', destination, ARGV[1], digest)
    redis.call('HSET', KEYS[6 + 3 * i], digest, ARGV[a + 6])
    local excess = redis.call('ZCARD', destination) - retention
    if excess > 0 then
      local oldest = redis.call('ZPOPMIN', destination, excess)
      for j = 1, #oldest, 2 do
        redis.call('HDEL', KEYS[6 + 3 * i], oldest[j])
      end
    end
    out[i + 1] = 1
  else
    redis.call('ZREM', source, digest)
    redis.call('ZADD', destination, ARGV[a + 5], digest)
    redis.call('HSET', KEYS[1], digest, ARGV[a + 4])
    if ARGV[a + 6] ~= '' then
      redis.call('HSET', KEYS[2], digest, ARGV[a + 6])
    end
    out[i + 1] = 1
  end
end
return out
