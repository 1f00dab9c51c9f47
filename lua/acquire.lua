-- idem: acquire idempotency records, one or many in one call.
-- For each id i (1-based):  KEYS[2i-1] record hash <ns>:{<id>}
--                           KEYS[2i]   meta hash   <ns>:{<id>}:meta (written by purge; read here)
-- ARGV[1] lease in ms
-- ARGV[2] TTL of a STARTED record in ms: the lease and how long a stale lock stays visible after it
-- ARGV[2i+1] payload fingerprint of id i ('' = do not check), ARGV[2i+2] owner token it proposes
--
-- Reply: one line per id, in order, then the server time in ms (one for the whole call); for one id,
-- the server time and the line in one string: '<now_ms> <line>'. The time is 0 when no answer needed
-- the clock (duplicates, mismatches, unusable keys: TIME costs Redis ~6 600 instructions, a tenth
-- of a duplicate's whole request). A line is a word saying what
-- happened, then numbers, then (for some) the rest of the line as it is stored, any bytes:
--   'ACQUIRED <fence> <attempt> <lease_until_ms> <takeover 0/1>'
--   'DUPLICATE <fence> <response>'
--   'IN_PROGRESS <remaining_ms> <attempt> <fence>'
--   'FAILED <fence> <error>'                      (terminal failure stored)
--   'MISMATCH <state> <stored fingerprint>'
--   'UNUSABLE <reason>'                           (key holds something that is not an idem record)
-- Lines, not tables: Redis spends ~4 800 instructions on a table reply before its first element (it
-- probes it for err, ok, double, big_number, map and set) and ~600 per element, and the client
-- makes an object per element; one string per id costs a concatenation (tools/script-costs.sh).
--
-- Fencing numbers are max(previous fence + 1, server time in microseconds): they strictly increase
-- across takeovers (previous + 1), across purges (purge keeps the last fence in the meta key) and
-- across expiry (the clock has moved on), without a counter key on the hot path.
-- Many ids per call spare the per-command cost of EVALSHA; on a Redis Cluster the caller groups ids
-- by hash slot.
--
-- This is the hot path, and Redis runs it on its only thread: the common cases (an id never seen,
-- a duplicate of a completed one) make as few redis.calls with as few arguments as they can.
-- Numbers go to redis.call as strings made once per call (Redis would print each number with
-- snprintf("%.17g") per argument, which costs more than the rest of an HSET field).
local call = redis.call
local lease, ttl = ARGV[1] + 0, ARGV[2]
if ttl + 0 < lease then
  return redis.error_reply('ERR idem: the TTL of a STARTED record must cover its lease')
end
-- The clock, read on first need (a duplicate needs none): as strings from TIME, then as numbers
-- (each string-to-number conversion costs Redis ~900 instructions, a call of a C function such as
-- tonumber ~2 000).
local nowS, nowUsS, nowUs, now, untilMs, untilS, freshLine

-- One id: its line. One function, not one per branch: Lua makes every closure afresh on every call.
-- fresh: the caller knows neither key exists (the batch's one EXISTS for all keys said so).
local function acquire(rec, meta, fp, token, fresh)
  -- The hot path: neither the record nor its meta key exists (an id never seen, or seen long
  -- ago and expired). One EXISTS for both keys; without a meta key the fence is the clock.
  local exists = not fresh and call('EXISTS', rec, meta) ~= 0
  local h, state, sfp
  if exists then
    -- what a duplicate needs (its stored response included); the other states read more below
    -- (the stored fingerprint only when there is one to compare: each HMGET field costs ~2 500)
    h = fp == '' and redis.pcall('HMGET', rec, 'state', 'fence', 'response')
                  or redis.pcall('HMGET', rec, 'state', 'fence', 'response', 'fp')
    if h.err then
      return 'UNUSABLE key holds a ' .. call('TYPE', rec)['ok'] .. ', not an idem record'
    end
    state, sfp = h[1], h[4]
    -- the other hot path, a duplicate of a completed id: the stored fence as it is (digits only,
    -- or the line would not parse), no clock arithmetic
    if state == 'COMPLETED' and (fp == '' or not sfp or sfp == '' or sfp == fp) then
      return 'DUPLICATE ' .. (h[2] and h[2]:match('^%d+$') or '0') .. ' ' .. (h[3] or '')
    end
    if not state then
      if call('EXISTS', rec) == 1 then
        return 'UNUSABLE hash has no idem state field'
      end
    elseif state ~= 'STARTED' and state ~= 'COMPLETED' and state ~= 'FAILED' then
      return 'UNUSABLE hash has an unknown state'
    elseif fp ~= '' and sfp and sfp ~= '' and sfp ~= fp then
      return 'MISMATCH ' .. state .. ' ' .. sfp
    end
  end
  if not nowUs then
    local t = call('TIME')
    local sec, us = t[1], t[2] -- strings; microseconds not zero-padded
    if #us < 6 then
      us = ('00000' .. us):sub(-6)
    end
    nowS = sec .. us:sub(1, 3) -- ms
    nowUsS = sec .. us
    nowUs = nowUsS + 0
    now = (nowUs - nowUs % 1000) / 1000
    untilMs = now + lease
  end
  local fence, attempt, takeover = nowUs, 1, 0
  if exists then
    if not state then
      -- purged before: the meta key keeps the last fence, so fences rise even if the clock stepped back
      fence = math.max((tonumber(call('HGET', meta, 'fence')) or 0) + 1, nowUs)
    else
      local sfence = tonumber(h[2]) or 0 -- (COMPLETED without a mismatch answered above)
      local s = call('HMGET', rec, 'token', 'attempt', 'lease_until_ms', 'failure', 'started_ms')
      attempt = tonumber(s[2]) or 1
      if state == 'STARTED' then
        local until_ms = tonumber(s[3]) or 0
        if s[1] == token then
          -- the same caller retrying after a lost reply: hand back the same ownership
          return string.format('ACQUIRED %d %d %d 0', sfence, attempt, until_ms)
        end
        if until_ms > now then
          return string.format('IN_PROGRESS %d %d %d', until_ms - now, attempt, sfence)
        end
        takeover = 1 -- the lease ran out: taken over below
      elseif s[4] == 'terminal' then
        return 'FAILED ' .. string.format('%d', sfence) .. ' ' .. (call('HGET', rec, 'error') or '')
      end
      -- a new attempt on an existing record (takeover of an expired lease, or retry after FAILED)
      fence, attempt = math.max(sfence + 1, nowUs), attempt + 1
      call('HDEL', rec, 'response', 'error', 'failure', 'finished_ms')
      call('HSETNX', rec, 'created_ms', s[5] or nowS)
    end
  end

  -- -> STARTED
  if not untilS then
    untilS = string.format('%d', untilMs)
  end
  local fenceS = fence == nowUs and nowUsS or string.format('%d', fence)
  if attempt > 1 then
    attempt = string.format('%d', attempt)
    call('HSET', rec, 'state', 'STARTED', 'fp', fp, 'token', token, 'fence', fenceS, 'attempt', attempt,
         'started_ms', nowS, 'lease_until_ms', untilS)
  elseif fp == '' then -- the fewest fields that say it all (attempt 1 and no fingerprint are implied)
    call('HSET', rec, 'state', 'STARTED', 'token', token, 'fence', fenceS, 'started_ms', nowS,
         'lease_until_ms', untilS)
  else
    call('HSET', rec, 'state', 'STARTED', 'fp', fp, 'token', token, 'fence', fenceS, 'started_ms', nowS,
         'lease_until_ms', untilS)
  end
  call('PEXPIRE', rec, ttl)
  if fence == nowUs and attempt == 1 then -- the same line for every fresh id of the call
    freshLine = freshLine or 'ACQUIRED ' .. nowUsS .. ' 1 ' .. untilS .. ' 0'
    return freshLine
  end
  return 'ACQUIRED ' .. fenceS .. ' ' .. attempt .. ' ' .. untilS .. ' ' .. takeover
end

if #KEYS == 2 then -- one id (idemctl run, Executor::execute): one string
  local line = acquire(KEYS[1], KEYS[2], ARGV[3], ARGV[4], false)
  return (nowS or '0') .. ' ' .. line
end
local keys, argv = KEYS, ARGV -- locals: a global is a table lookup on every use
local n = #keys / 2
-- A consumer's batch is mostly ids never seen: one EXISTS for every key of the call (~3 900
-- instructions and ~100 per key) spares each id its own (~3 900). An id that appears twice in
-- the call finds its first occurrence's record through the ordinary EXISTS.
local fresh = call('EXISTS', unpack(keys)) == 0
local made = fresh and {} or nil
local out = {}
for i = 1, n do
  local rec = keys[2 * i - 1]
  if fresh then
    out[i] = acquire(rec, keys[2 * i], argv[2 * i + 1], argv[2 * i + 2], not made[rec])
    made[rec] = true
  else
    out[i] = acquire(rec, keys[2 * i], argv[2 * i + 1], argv[2 * i + 2], false)
  end
end
out[n + 1] = nowS or '0'
return out
