-- idem race lab: the business side effect, with a fencing check.
-- KEYS[1] the sink's hash for one event (highest fence seen), KEYS[2] the executions list,
-- KEYS[3] the event's idempotency record (who owns it now)
-- ARGV[1] event id, ARGV[2] fencing number (0 = the caller has none), ARGV[3] worker, ARGV[4] TTL ms
-- Reply: 1 = executed, 0 = refused (fenced off)
-- A fenced effect is refused when a higher fence has been seen (Kleppmann's check), and also when
-- the record has a newer owner already: the late owner's effect must not land first either.
local sink, executions, record = KEYS[1], KEYS[2], KEYS[3]
local id, fence, worker, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
if fence > 0 then
  local seen = tonumber(redis.call('HGET', sink, 'max_fence') or '0')
  local current = tonumber(redis.pcall('HGET', record, 'fence') or '0') or 0
  if fence < seen or (current > 0 and fence ~= current) then
    return 0
  end
  redis.call('HSET', sink, 'max_fence', ARGV[2])
  redis.call('PEXPIRE', sink, ttl)
end
redis.call('RPUSH', executions, id .. ' ' .. worker .. ' ' .. ARGV[2])
redis.call('PEXPIRE', executions, ttl)
return 1
