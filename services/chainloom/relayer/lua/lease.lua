-- Acquire, renew or release a worker lease, and register the worker for the reaper.
-- KEYS[1] lease:<worker>  KEYS[2] workers hash (worker id -> chain)
-- ARGV[1] token  ARGV[2] ttl in ms  ARGV[3] action: 'acquire' | 'renew' | 'release'
-- ARGV[4] worker id  ARGV[5] chain
-- Returns 1 when done, 0 when the lease is held by another instance (acquire) or is no
-- longer ours (renew, release).
if ARGV[3] == 'acquire' then
  if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return 0
  end
  redis.call('HSET', KEYS[2], ARGV[4], ARGV[5])
  return 1
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[3] == 'release' then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
