-- idem: acquire an idempotency record.
-- KEYS[1] record hash  <ns>:{<id>}
-- KEYS[2] meta hash    <ns>:{<id>}:meta  (fencing counter and last operator action; outlives the record)
-- ARGV[1] payload fingerprint ('' = do not check)
-- ARGV[2] owner token proposed by the caller
-- ARGV[3] lease in ms
-- ARGV[4] how long a STARTED record is kept past its lease deadline, in ms (so stale locks stay visible)
--
-- Replies (first element is the status):
--   {'ACQUIRED', token, fence, attempt, lease_until_ms, takeover(0/1), now_ms}
--   {'DUPLICATE', response, fence, finished_ms, now_ms}
--   {'IN_PROGRESS', remaining_ms, attempt, fence, now_ms}
--   {'FAILED', error, fence, now_ms}          (terminal failure stored)
--   {'MISMATCH', stored_fingerprint, state, now_ms}
--   {'UNUSABLE', reason, now_ms}              (key holds something that is not an idem record)
local rec, meta = KEYS[1], KEYS[2]
local fp, token = ARGV[1], ARGV[2]
local lease, keep = tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local ktype = redis.call('TYPE', rec)['ok']
if ktype ~= 'none' and ktype ~= 'hash' then
  return {'UNUSABLE', 'key holds a ' .. ktype .. ', not an idem record', now}
end

local function start(attempt, prevFence, takeover)
  local fence = redis.call('HINCRBY', meta, 'fence', 1)
  if fence <= prevFence then
    -- the meta key was lost (never expected: it outlives the record); keep fences increasing anyway
    fence = prevFence + 1
    redis.call('HSET', meta, 'fence', fence)
  end
  redis.call('HDEL', rec, 'response', 'error', 'failure', 'finished_ms')
  redis.call('HSET', rec, 'v', '1', 'state', 'STARTED', 'fp', fp, 'token', token,
             'fence', fence, 'attempt', attempt, 'started_ms', now,
             'lease_until_ms', now + lease, 'updated_ms', now)
  redis.call('HSETNX', rec, 'created_ms', now)
  redis.call('PEXPIRE', rec, lease + keep)
  if redis.call('PTTL', meta) < lease + keep then
    redis.call('PEXPIRE', meta, lease + keep)
  end
  return {'ACQUIRED', token, fence, attempt, now + lease, takeover, now}
end

if ktype == 'none' then
  local lastFence = tonumber(redis.call('HGET', meta, 'fence') or '0') or 0
  return start(1, lastFence, 0)
end

local h = redis.call('HMGET', rec, 'state', 'fp', 'token', 'fence', 'attempt', 'lease_until_ms', 'failure')
local state, sfp, stoken = h[1], h[2], h[3]
local sfence, sattempt = tonumber(h[4]) or 0, tonumber(h[5]) or 0
local until_ms, failure = tonumber(h[6]) or 0, h[7]
if state ~= 'STARTED' and state ~= 'COMPLETED' and state ~= 'FAILED' then
  return {'UNUSABLE', 'hash has no idem state field', now}
end
if fp ~= '' and sfp and sfp ~= '' and sfp ~= fp then
  return {'MISMATCH', sfp, state, now}
end

if state == 'COMPLETED' then
  local r = redis.call('HMGET', rec, 'response', 'finished_ms')
  return {'DUPLICATE', r[1] or '', sfence, tonumber(r[2]) or 0, now}
end
if state == 'STARTED' then
  if stoken == token then
    -- the same caller retrying after a lost reply: hand back the same ownership
    return {'ACQUIRED', token, sfence, sattempt, until_ms, 0, now}
  end
  if until_ms > now then
    return {'IN_PROGRESS', until_ms - now, sattempt, sfence, now}
  end
  return start(sattempt + 1, sfence, 1)
end
-- FAILED
if failure == 'terminal' then
  return {'FAILED', redis.call('HGET', rec, 'error') or '', sfence, now}
end
return start(sattempt + 1, sfence, 0)
