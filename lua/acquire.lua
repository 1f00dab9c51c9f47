-- idem: acquire idempotency records, one or many in one call.
-- For each id i (1-based):  KEYS[2i-1] record hash <ns>:{<id>}
--                           KEYS[2i]   meta hash   <ns>:{<id>}:meta (written by purge; read here)
-- ARGV[1] lease in ms
-- ARGV[2] how long a STARTED record is kept past its lease deadline, in ms (stale locks stay visible)
-- ARGV[2i+1] payload fingerprint of id i ('' = do not check), ARGV[2i+2] owner token it proposes
--
-- Reply: one array per id, in order, then the server time in ms (one for the whole call):
--   {'ACQUIRED', fence, attempt, lease_until_ms, takeover(0/1)}
--   {'DUPLICATE', response, fence, finished_ms}
--   {'IN_PROGRESS', remaining_ms, attempt, fence}
--   {'FAILED', error, fence}                  (terminal failure stored)
--   {'MISMATCH', stored_fingerprint, state}
--   {'UNUSABLE', reason}                      (key holds something that is not an idem record)
--
-- Fencing numbers are max(previous fence + 1, server time in microseconds): they strictly increase
-- across takeovers (previous + 1), across purges (purge keeps the last fence in the meta key) and
-- across expiry (the clock has moved on), without a counter key on the hot path.
-- Many ids per call spare the per-command cost of EVALSHA; on a Redis Cluster the caller groups ids
-- by hash slot. This is the hot path: the common cases make as few redis.calls as they can.
local lease, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(nowUs / 1000)

-- numbers the hot path writes, formatted once per call (redis.call would format each with %.14g)
local nowS, untilS = string.format('%d', now), string.format('%d', now + lease)
local nowUsS = string.format('%d', nowUs) -- the fence of every id seen for the first time
local ttlS = string.format('%d', lease + keep)

-- absent -> STARTED: the fewest fields that say it all (attempt 1 and an empty fingerprint are implied)
local function start(rec, fp, token, fence)
  local fenceS = fence == nowUs and nowUsS or string.format('%d', fence)
  if fp == '' then
    redis.call('HSET', rec, 'state', 'STARTED', 'token', token, 'fence', fenceS,
               'started_ms', nowS, 'lease_until_ms', untilS)
  else
    redis.call('HSET', rec, 'state', 'STARTED', 'fp', fp, 'token', token,
               'fence', fenceS, 'started_ms', nowS, 'lease_until_ms', untilS)
  end
  redis.call('PEXPIRE', rec, ttlS)
  return {'ACQUIRED', fence, 1, now + lease, 0}
end

local function acquire(rec, meta, fp, token)
  -- The hot path: neither the record nor its meta key exists (an id never seen, or seen long
  -- ago and expired). One EXISTS for both keys; without a meta key the fence is the clock.
  if redis.call('EXISTS', rec, meta) == 0 then
    return start(rec, fp, token, nowUs)
  end

  -- everything any branch below needs, in one call (the response of a COMPLETED record included)
  local h = redis.pcall('HMGET', rec, 'state', 'fp', 'token', 'fence', 'attempt', 'lease_until_ms',
                        'failure', 'started_ms', 'response', 'finished_ms')
  if h.err then
    return {'UNUSABLE', 'key holds a ' .. redis.call('TYPE', rec)['ok'] .. ', not an idem record'}
  end
  local state = h[1]

  if not state then
    if redis.call('EXISTS', rec) == 1 then
      return {'UNUSABLE', 'hash has no idem state field'}
    end
    -- purged before: the meta key keeps the last fence, so fences rise even if the clock stepped back
    return start(rec, fp, token, math.max((tonumber(redis.call('HGET', meta, 'fence')) or 0) + 1, nowUs))
  end

  local sfp, stoken = h[2], h[3]
  local sfence, sattempt = tonumber(h[4]) or 0, tonumber(h[5]) or 1
  local until_ms, failure = tonumber(h[6]) or 0, h[7]
  if state ~= 'STARTED' and state ~= 'COMPLETED' and state ~= 'FAILED' then
    return {'UNUSABLE', 'hash has an unknown state'}
  end
  if fp ~= '' and sfp and sfp ~= '' and sfp ~= fp then
    return {'MISMATCH', sfp, state}
  end

  -- a new attempt on an existing record (takeover of an expired lease, or retry after FAILED)
  local function restart(takeover)
    local fence = math.max(sfence + 1, nowUs)
    local attempt = sattempt + 1
    redis.call('HDEL', rec, 'response', 'error', 'failure', 'finished_ms')
    redis.call('HSETNX', rec, 'created_ms', h[8] or now)
    redis.call('HSET', rec, 'state', 'STARTED', 'fp', fp, 'token', token, 'fence', string.format('%d', fence),
               'attempt', attempt, 'started_ms', nowS, 'lease_until_ms', untilS)
    redis.call('PEXPIRE', rec, ttlS)
    return {'ACQUIRED', fence, attempt, now + lease, takeover}
  end

  if state == 'COMPLETED' then
    return {'DUPLICATE', h[9] or '', sfence, tonumber(h[10]) or 0}
  end
  if state == 'STARTED' then
    if stoken == token then
      -- the same caller retrying after a lost reply: hand back the same ownership
      return {'ACQUIRED', sfence, sattempt, until_ms, 0}
    end
    if until_ms > now then
      return {'IN_PROGRESS', until_ms - now, sattempt, sfence}
    end
    return restart(1)
  end
  -- FAILED
  if failure == 'terminal' then
    return {'FAILED', redis.call('HGET', rec, 'error') or '', sfence}
  end
  return restart(0)
end

local n = #KEYS / 2
local out = {}
for i = 1, n do
  out[i] = acquire(KEYS[2 * i - 1], KEYS[2 * i], ARGV[2 * i + 1], ARGV[2 * i + 2])
end
out[n + 1] = now
return out
