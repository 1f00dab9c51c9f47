-- idem: acquire idempotency records, one or many in one call.
-- For each id i (1-based):  KEYS[2i-1] record hash <ns>:{<id>}
--                           KEYS[2i]   meta hash   <ns>:{<id>}:meta (written by purge; read here)
-- ARGV[1] lease in ms
-- ARGV[2] TTL of a STARTED record in ms: the lease and how long a stale lock stays visible after it
-- ARGV[2i+1] payload fingerprint of id i ('' = do not check), ARGV[2i+2] owner token it proposes
--
-- Reply: one line per id, in order, then the server time in microseconds (one for the whole call);
-- for one id, the time and the line in one string: '<now_us> <line>', or the time alone when the
-- id was acquired fresh. The time is 0 when no answer needed the clock (duplicates, mismatches,
-- unusable keys: TIME costs Redis ~6 500 instructions, an eighth of a duplicate's whole request).
-- A line is a word saying what happened, then numbers, then (for some) the rest of the line as it
-- is stored, any bytes:
--   '<fence>'                                     (acquired fresh: attempt 1, no takeover, the
--                                                  fence is the clock, the lease runs from it)
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
-- across expiry (the clock has moved on), without a counter key on the hot path. A first attempt
-- whose fence is the clock writes neither started_ms nor lease_until_ms: it started at the fence
-- (in microseconds), and its lease runs until that millisecond + lease_ms (renew writes
-- lease_until_ms). So the hot path converts no number and formats none.
-- Many ids per call spare the per-command cost of EVALSHA; on a Redis Cluster the caller groups ids
-- by hash slot.
--
-- This is the hot path, and Redis runs it on its only thread: the common cases (an id never seen,
-- a duplicate of a completed one) make as few redis.calls with as few arguments, and as few Lua
-- strings (each costs ~1 000 instructions or more: Lua hashes and interns every one), as they can.
-- They run in the loop below, not in a function: Lua makes every closure afresh on every call, and
-- each local a closure captures costs an allocation. Numbers go to redis.call as strings made once
-- per call (Redis would print each number with snprintf("%.17g") per argument, which costs more
-- than the rest of an HSET field).
local call = redis.call
local lease, ttl = ARGV[1] + 0, ARGV[2]
if ttl + 0 < lease then
  return redis.error_reply('ERR idem: the TTL of a STARTED record must cover its lease')
end

-- A record that exists and is neither a duplicate nor refused at once: STARTED (the same owner
-- again, in progress, or a lease to take over), FAILED (terminal, or a new attempt), or only the
-- meta key (purged before). Returns the line when nothing is to be written, else nil and the fence,
-- attempt and takeover flag of the new attempt. No upvalues: everything comes as an argument.
local function existing(rec, meta, token, h, state, now, nowUs)
  local call = redis.call
  if not state then
    -- purged before: the meta key keeps the last fence, so fences rise even if the clock stepped back
    return nil, math.max((tonumber(call('HGET', meta, 'fence')) or 0) + 1, nowUs), 1, 0
  end
  local sfence = tonumber(h[2]) or 0 -- (COMPLETED without a mismatch was answered as a duplicate)
  local s = call('HMGET', rec, 'token', 'attempt', 'lease_until_ms', 'failure', 'started_ms', 'lease_ms')
  local attempt, takeover = tonumber(s[2]) or 1, 0
  -- a first attempt that wrote neither start nor deadline started at its fence's millisecond
  local fenceMs = (sfence - sfence % 1000) / 1000
  if state == 'STARTED' then
    local until_ms = tonumber(s[3]) or (sfence > 0 and tonumber(s[6]) and fenceMs + s[6])
    if not until_ms then -- not idem's (idem writes a deadline, or a fence and a lease): never taken over
      return 'UNUSABLE a STARTED hash without a lease deadline (another writer\'s lock?)'
    end
    if s[1] == token then
      -- the same caller retrying after a lost reply: hand back the same ownership
      return string.format('ACQUIRED %d %d %d 0', sfence, attempt, until_ms)
    end
    if until_ms > now then
      return string.format('IN_PROGRESS %d %d %d', until_ms - now, attempt, sfence)
    end
    takeover = 1 -- the lease ran out: taken over
  elseif s[4] == 'terminal' then
    return 'FAILED ' .. string.format('%d', sfence) .. ' ' .. (call('HGET', rec, 'error') or '')
  end
  -- a new attempt on an existing record (takeover of an expired lease, or retry after FAILED),
  -- which keeps the first attempt's start
  call('HDEL', rec, 'response', 'error', 'failure', 'finished_ms', 'retention_ms', 'lease_ms')
  call('HSETNX', rec, 'created_ms', s[5] or string.format('%d', fenceMs))
  return nil, math.max(sfence + 1, nowUs), attempt + 1, takeover
end

local keys, argv = KEYS, ARGV -- locals: a global is a table lookup on every use
local n = #keys / 2
-- A consumer's batch is mostly ids never seen: one EXISTS for every key of the call (~3 900
-- instructions and ~100 per key) spares each id its own (~3 900). An id that appears twice in
-- the call finds its first occurrence's record through the ordinary EXISTS.
local absent = n > 1 and call('EXISTS', unpack(keys)) == 0
local made = absent and {} or nil
-- the clock, read on first need (a duplicate needs none): the time in microseconds as TIME's
-- digits; as numbers only for a record that exists (each string-to-number conversion costs Redis
-- ~900 instructions, string.format ~2 300)
local nowUsS, nowUs, now, untilS
local out = n > 1 and {} or nil
for i = 1, n do
  local rec, meta, fp, token = keys[2 * i - 1], keys[2 * i], argv[2 * i + 1], argv[2 * i + 2]
  local exists
  if absent and not made[rec] then
    exists, made[rec] = false, true
  else
    exists = call('EXISTS', rec, meta) ~= 0
  end
  local line, h, state
  if exists then
    -- what a duplicate needs (its stored response included); the other states read more in
    -- existing() (the stored fingerprint only when there is one to compare: each HMGET field
    -- costs ~2 500)
    h = fp == '' and redis.pcall('HMGET', rec, 'state', 'fence', 'response')
                  or redis.pcall('HMGET', rec, 'state', 'fence', 'response', 'fp')
    if h.err then
      line = 'UNUSABLE key holds a ' .. call('TYPE', rec)['ok'] .. ', not an idem record'
    else
      local sfp
      state, sfp = h[1], h[4]
      if state == 'COMPLETED' and (fp == '' or not sfp or sfp == '' or sfp == fp) then
        -- the other hot path, a duplicate of a completed id: the stored fence as it is (digits
        -- only, or the line would not parse), no clock
        line = 'DUPLICATE ' .. (h[2] and h[2]:match('^%d+$') or '0') .. ' ' .. (h[3] or '')
      elseif not state then
        if call('EXISTS', rec) == 1 then
          line = 'UNUSABLE hash has no idem state field'
        end -- else only the meta key: purged before
      elseif state ~= 'STARTED' and state ~= 'COMPLETED' and state ~= 'FAILED' then
        line = 'UNUSABLE hash has an unknown state'
      elseif fp ~= '' and sfp and sfp ~= '' and sfp ~= fp then
        line = 'MISMATCH ' .. state .. ' ' .. sfp
      end
    end
  end
  if not line then
    if not nowUsS then
      local t = call('TIME')
      local sec, us = t[1], t[2] -- strings; microseconds not zero-padded
      if #us < 6 then
        us = ('00000' .. us):sub(-6)
      end
      nowUsS = sec .. us
    end
    local fence, attempt, takeover = nil, 1, 0
    if exists then
      if not now then
        nowUs = nowUsS + 0
        now = (nowUs - nowUs % 1000) / 1000
        untilS = string.format('%d', now + lease)
      end
      line, fence, attempt, takeover = existing(rec, meta, token, h, state, now, nowUs)
    end
    if not line then -- -> STARTED
      if not fence then -- the hot path: the fewest fields that say it all (attempt 1, the start
        -- and the lease's start are the fence, no fingerprint when none was given)
        if fp == '' then
          call('HSET', rec, 'state', 'STARTED', 'token', token, 'fence', nowUsS, 'lease_ms', argv[1])
        else
          call('HSET', rec, 'state', 'STARTED', 'fp', fp, 'token', token, 'fence', nowUsS, 'lease_ms', argv[1])
        end
      else
        local fenceS, attemptS = string.format('%d', fence), string.format('%d', attempt)
        call('HSET', rec, 'state', 'STARTED', 'fp', fp, 'token', token, 'fence', fenceS, 'attempt', attemptS,
             'started_ms', string.format('%d', now), 'lease_until_ms', untilS)
        line = 'ACQUIRED ' .. fenceS .. ' ' .. attemptS .. ' ' .. untilS .. ' ' .. takeover
      end
      call('PEXPIRE', rec, ttl)
      if not line then -- a first attempt: its fence alone (no string made)
        if n == 1 then
          return nowUsS
        end
        line = nowUsS
      end
    end
  end
  if n == 1 then -- one id (idemctl run, Executor::execute): the time and the line in one string
    return (nowUsS or '0') .. ' ' .. line
  end
  out[i] = line
end
out[n + 1] = nowUsS or '0'
return out
