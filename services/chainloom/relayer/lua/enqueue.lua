-- Enqueue one request unless its digest is anywhere already (one atomic step).
-- KEYS[1] req hash (digest -> request JSON)   KEYS[2] loc hash (digest -> location code)
-- KEYS[3] completed:<chain> zset             KEYS[4] incoming:<chain> zset
-- KEYS[5] chains set
-- ARGV[1] digest  ARGV[2] request JSON  ARGV[3] incoming score (ready time)  ARGV[4] chain
-- Returns '' when queued, else the location code where it already is ('C' = completed log).
local where = redis.call('HGET', KEYS[2], ARGV[1])
if where then
  return where
end
if redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  return 'C'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], 'I')
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
redis.call('SADD', KEYS[5], ARGV[4])
return ''
