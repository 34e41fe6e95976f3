-- ARGV[1]: the exchange's header, named (JSON): prefix, worker, ttl, bands, the counts of
-- each section (push, release, done, renew, renew_keys, promote), take (each band's quota),
-- total (keys to take), reap (1: return expired leases), budget, cap, share; then the
-- sections, in that order, each a run of records of fixed length (named below)
local h = cjson.decode(ARGV[1])
local P, worker, ttl, nb = h.prefix, h.worker, h.ttl, h.bands
local n_push, n_rel, n_done = h.push, h.release, h.done
local n_renew, n_renew_keys = h.renew, h.renew_keys
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local total = h.total
local budget = h.budget
local cap = h.cap
local n_prom = h.promote
local share = h.share
local i = 2
-- admitted entries: [key, band, delay ('' or seconds from now), blob, host ('': uncounted),
-- pattern ('host<TAB>pattern', '': uncounted), trap ('1': the pushing worker's evidence says
-- the pattern is a trap), the worker's exchange it was first sent in]; a host's admissions
-- by all workers are counted here and held to the budget (0: none), a pattern's too, and a
-- trap pattern is held to its cap (0: none).  The last exchange of the worker whose pushes
-- were queued is recorded with them: a push sent again because an answer was lost (the
-- script ran, the connection dropped) is not queued twice if that exchange was applied (a
-- worker sends a push again in each exchange until one is answered, so it was queued iff
-- an exchange from its first on was applied)
local over, pover, repeated = 0, 0, 0
local applied = 0
if n_push > 0 then
  applied = tonumber(redis.call('HGET', P..':ap', worker) or '0')
  redis.call('HSET', P..':ap', worker, h.seq)
end
for _ = 1, n_push do
  local key, band, delay, blob = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  local host, pattern, trap, sent = ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]
  i = i + 8
  local admit = true
  if tonumber(sent) <= applied then
    repeated = repeated + 1
    admit = false
  elseif budget > 0 and host ~= '' and
      tonumber(redis.call('HGET', P..':budget', host) or '0') >= budget then
    over = over + 1
    admit = false
  elseif cap > 0 and pattern ~= '' and trap == '1' and
      tonumber(redis.call('HGET', P..':pcap', pattern) or '0') >= cap then
    pover = pover + 1
    admit = false
  end
  if admit then
    if budget > 0 and host ~= '' then
      redis.call('HINCRBY', P..':budget', host, 1)
    end
    if cap > 0 and pattern ~= '' then
      redis.call('HINCRBY', P..':pcap', pattern, 1)
    end
    local id = redis.call('INCR', P..':id')
    redis.call('HSET', P..':e', id, blob)
    if delay ~= '' then
      redis.call('ZADD', P..':d', now + tonumber(delay), id..'|'..key)
    else
      local q, r = lane(P, key, blob)
      redis.call('ZADD', q, r * RANK + band * SCALE + id, id)
      ready(P, key)
    end
  end
end
-- delayed entries whose time has come join their key's queue
for _, m in ipairs(redis.call('ZRANGEBYSCORE', P..':d', '-inf', now, 'LIMIT', 0, 1000)) do
  redis.call('ZREM', P..':d', m)
  local sep = string.find(m, '|', 1, true)
  local key = string.sub(m, sep + 1)
  requeue(P, string.sub(m, 1, sep - 1), key)
  ready(P, key)
end
-- keys released: [key, delay or '' (prefixed 'P': the key is parked until then), state or
-- '', ids to requeue (comma-separated), the lease's fencing token]: only the lease it names
-- is released (the holder is 'worker#token': a worker that lost the lease releases nothing,
-- even once it leased the key again)
local lost = 0
for _ = 1, n_rel do
  local key, delay, state, back = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local holder = worker..'#'..ARGV[i + 4]
  i = i + 5
  local parked = string.sub(delay, 1, 1) == 'P'
  if parked then delay = string.sub(delay, 2) end
  if redis.call('HGET', P..':lo', key) == holder then
    for id in string.gmatch(back, '[^,]+') do
      redis.call('ZREM', P..':ls', id..'|'..key)
      requeue(P, id, key)
    end
    if delay ~= '' then redis.call('HSET', P..':na', key, now + tonumber(delay)) end
    if parked and delay ~= '' then redis.call('ZADD', P..':pk', now + tonumber(delay), key) end
    if state ~= '' then redis.call('HSET', P..':hs', key, state) end
    unlock(P, key)
    ready(P, key)
  else
    lost = lost + 1
  end
end
-- entries done with: 'token#id|key'
for _ = 1, n_done do
  complete(P, ARGV[i])
  i = i + 1
end
-- leases still held by this worker
for _ = 1, n_renew do
  redis.call('ZADD', P..':ls', 'XX', now + ttl, ARGV[i])
  i = i + 1
end
local gone = {}  -- keys this worker believed it held, whose lease had expired
for _ = 1, n_renew_keys do  -- 'token#key'
  local token, key = fenced(ARGV[i])
  if redis.call('HGET', P..':lo', key) == worker..'#'..token then
    redis.call('ZADD', P..':lk', 'XX', now + ttl, key)
  else
    gone[#gone + 1] = key
  end
  i = i + 1
end
-- promotions: [key, fingerprint (8 bytes), band]: a queued entry of that URL moves to the
-- better band (looked for in its key's queue, up to 512 entries long; a URL already taken
-- is not there)
local promoted = 0
for _ = 1, n_prom do
  local key, fp, band = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  i = i + 3
  local q = P..':q:'..key
  if redis.call('ZCARD', q) <= 512 then
    for _, id in ipairs(redis.call('ZRANGE', q, 0, -1)) do
      local blob = redis.call('HGET', P..':e', id)
      if blob and string.sub(blob, 3, 10) == fp then
        if string.byte(blob, 1) > band then
          blob = string.char(band) .. string.sub(blob, 2)
          redis.call('HSET', P..':e', id, blob)
          redis.call('ZADD', q, string.byte(blob, 2) * RANK + band * SCALE + tonumber(id), id)
          ready(P, key)
          promoted = promoted + 1
        end
        break
      end
    end
  end
end
-- leases of crashed (or stalled) workers (looked for about once a second)
local expired = 0
if h.reap == 1 then
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', P..':lk', '-inf', now, 'LIMIT', 0, 200)) do
    unlock(P, key)
    ready(P, key)
  end
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', P..':ls', '-inf', now, 'LIMIT', 0, 200)) do
    redis.call('ZREM', P..':ls', m)
    local sep = string.find(m, '|', 1, true)
    local id, key = string.sub(m, 1, sep - 1), string.sub(m, sep + 1)
    requeue(P, id, key)
    ready(P, key)
    expired = expired + 1
  end
end
-- take ready keys: each band up to its quota (weighted, so no band starves), then the
-- rest of the total from the best bands
local out = {}
local taken = 0
local drained = {}
for pass = 1, 2 do
 for b = 0, nb - 1 do
  local quota = h.take[b + 1]
  if pass == 2 then quota = total - taken end
  if quota > total - taken then quota = total - taken end
  if quota > 0 and not drained[b] then
    local keys = redis.call('ZRANGEBYSCORE', P..':r:'..b, '-inf', now, 'LIMIT', 0, quota)
    if #keys < quota then drained[b] = true end
    for _, key in ipairs(keys) do
      redis.call('ZREM', P..':r:'..b, key)
      redis.call('HDEL', P..':hb', key)
      local popped = redis.call('ZPOPMIN', next_lane(P, key, share))
      if #popped > 0 then
        local id = popped[1]
        local blob = redis.call('HGET', P..':e', id)
        if blob then
          -- the lease's fencing token: every release, renewal and completion names it
          local token = tostring(redis.call('INCR', P..':tok'))
          redis.call('ZADD', P..':ls', now + ttl, id..'|'..key)
          redis.call('ZADD', P..':lk', now + ttl, key)
          redis.call('HSET', P..':lo', key, worker..'#'..token)
          redis.call('HSET', P..':et', id, token)
          redis.call('HSET', P..':hb', key, 'L')
          out[#out + 1] = key
          out[#out + 1] = id
          out[#out + 1] = blob
          out[#out + 1] = redis.call('HGET', P..':hs', key) or ''
          out[#out + 1] = redis.call('ZCARD', P..':q:'..key)  -- new URLs still waiting
          out[#out + 1] = token
          taken = taken + 1
        else
          ready(P, key)
        end
      end
    end
  end
 end
end
return {redis.call('HLEN', P..':e'), expired, lost, out, over, pover, promoted,
        parked_entries(P, now), gone, repeated}
