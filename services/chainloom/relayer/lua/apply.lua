-- Apply moves, each if and only if its request is where the caller believes it is.
-- The whole call is one atomic step; each move is decided on its own, against the locations
-- as they were when the call began (a digest named twice in one call moves at most once).
-- KEYS[1] loc hash  KEYS[2] req hash  KEYS[3] vaa hash
-- then per move i (from 0): KEYS[4 + 3i] source zset, KEYS[5 + 3i] destination zset,
--   KEYS[6 + 3i] Completed log hash of the destination chain (for 'C'; else the destination)
-- ARGV[1] now  ARGV[2] retention (most entries kept per chain in the Completed log)
-- ARGV per move i (6 each, from ARGV[3]): op, digest, expected location code,
--   new location code, destination score, payload
--   op 'M' (move): payload is the new state JSON ('' keeps the stored one)
--   op 'C' (complete): purge the request; payload is the start of its Completed log entry,
--   to which the script appends the stored request state and a closing brace
-- Returns per move 1 when applied, 0 when the request was not at the expected location.
local n = (#ARGV - 2) / 6
if n == 0 then
  return {}
end
local now, retention = ARGV[1], tonumber(ARGV[2])
local digests = {}
for i = 0, n - 1 do
  digests[i + 1] = ARGV[2 + i * 6 + 2]
end
local locations = redis.call('HMGET', KEYS[1], unpack(digests))
local function push(groups, key, a, b)
  local list = groups[key]
  if not list then
    list = {}
    groups[key] = list
  end
  list[#list + 1] = a
  if b then
    list[#list + 1] = b
  end
end
local out, seen = {}, {}
local removed, added, logs, trimmed = {}, {}, {}, {}
local relocated, restated, purged, entries = {}, {}, {}, {}
for i = 0, n - 1 do
  local a = 2 + i * 6
  local op, digest = ARGV[a + 1], ARGV[a + 2]
  if seen[digest] or locations[i + 1] ~= ARGV[a + 3] then
    out[i + 1] = 0
  else
    seen[digest] = true
    local destination = KEYS[5 + 3 * i]
    push(removed, KEYS[4 + 3 * i], digest)
    if op == 'C' then
      purged[#purged + 1] = digest
      push(added, destination, now, digest)
      entries[#entries + 1] = {KEYS[6 + 3 * i], digest, ARGV[a + 6]}
      trimmed[destination] = KEYS[6 + 3 * i]
    else
      push(added, destination, ARGV[a + 5], digest)
      relocated[#relocated + 1] = digest
      relocated[#relocated + 1] = ARGV[a + 4]
      if ARGV[a + 6] ~= '' then
        restated[#restated + 1] = digest
        restated[#restated + 1] = ARGV[a + 6]
      end
    end
    out[i + 1] = 1
  end
end
for key, list in pairs(removed) do
  redis.call('ZREM', key, unpack(list))
end
for key, list in pairs(added) do
  redis.call('ZADD', key, unpack(list))
end
if #relocated > 0 then
  redis.call('HSET', KEYS[1], unpack(relocated))
end
if #restated > 0 then
  redis.call('HSET', KEYS[2], unpack(restated))
end
if #purged > 0 then
  local states = redis.call('HMGET', KEYS[2], unpack(purged))
  for j, entry in ipairs(entries) do
    push(logs, entry[1], entry[2], entry[3] .. (states[j] or 'null') .. '}')
  end
  redis.call('HDEL', KEYS[1], unpack(purged))
  redis.call('HDEL', KEYS[2], unpack(purged))
  redis.call('HDEL', KEYS[3], unpack(purged))
end
for key, list in pairs(logs) do
  redis.call('HSET', key, unpack(list))
end
for index, log in pairs(trimmed) do
  local excess = redis.call('ZCARD', index) - retention
  if excess > 0 then
    local oldest = redis.call('ZPOPMIN', index, excess)
    local gone = {}
    for j = 1, #oldest, 2 do
      gone[#gone + 1] = oldest[j]
    end
    redis.call('HDEL', log, unpack(gone))
  end
end
return out
