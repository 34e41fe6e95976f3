local SCALE = 17592186044416
local RANK = 281474976710656
-- a key's back queue has two lanes: q (discovery) and f (refreshes: an entry whose rank byte
-- is 128 or more); the key is listed ready in the better of the two heads' bands
local function lane(P, key, blob)
  local r = string.byte(blob, 2)
  if r >= 128 then return P..':f:'..key, r - 128 end
  return P..':q:'..key, r
end
local function ready(P, key)
  local old = redis.call('HGET', P..':hb', key)
  if old == 'L' then return end
  local band = nil
  for _, q in ipairs({P..':q:'..key, P..':f:'..key}) do
    local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
    if #head > 0 then
      local b = math.floor(tonumber(head[2]) / SCALE) % 16
      if band == nil or b < band then band = b end
    end
  end
  if band == nil then
    if old then redis.call('ZREM', P..':r:'..old, key); redis.call('HDEL', P..':hb', key) end
    redis.call('HDEL', P..':sc', key)
    return
  end
  if old and tonumber(old) ~= band then redis.call('ZREM', P..':r:'..old, key) end
  local at = tonumber(redis.call('HGET', P..':na', key) or '0')
  redis.call('ZADD', P..':r:'..band, at, key)
  redis.call('HSET', P..':hb', key, band)
end
-- the lane a ready key's next entry comes from: when both wait, refreshes get ``share`` of
-- the turns (the key's credit grows by the share at each such turn; a refresh spends one
-- unit); a lane waiting alone takes the turn and the credit stands
local function next_lane(P, key, share)
  local q, f = P..':q:'..key, P..':f:'..key
  local nq, nf = redis.call('ZCARD', q), redis.call('ZCARD', f)
  if nf == 0 then return q end
  if nq == 0 then return f end
  local credit = tonumber(redis.call('HGET', P..':sc', key) or '0') + share
  if credit >= 1 - 1e-9 then
    redis.call('HSET', P..':sc', key, credit - 1)
    return f
  end
  redis.call('HSET', P..':sc', key, credit)
  return q
end
local function requeue(P, id, key)
  redis.call('HDEL', P..':et', id)  -- its lease's token: a late completion of it is stale
  local blob = redis.call('HGET', P..':e', id)
  if blob then
    local q, r = lane(P, key, blob)
    redis.call('ZADD', q, r * RANK + string.byte(blob, 1) * SCALE + tonumber(id), id)
  end
end
-- a record 'token#rest' (the fencing token of the lease it was sent under): the token
-- and the rest; a record without one ('rest') gives token nil
local function fenced(m)
  local sharp = string.find(m, '#', 1, true)
  if not sharp then return nil, m end
  return string.sub(m, 1, sharp - 1), string.sub(m, sharp + 1)
end
-- an entry done with ('token#id|key'): its lease and its record go, if the lease it was
-- fetched under is still the entry's (a worker that lost that lease completes nothing:
-- the entry went back to its queue, and may be leased again); returns whether it did
local function complete(P, m)
  local token, member = fenced(m)
  local id = string.sub(member, 1, string.find(member, '|', 1, true) - 1)
  if token and redis.call('HGET', P..':et', id) ~= token then return false end
  redis.call('ZREM', P..':ls', member)
  redis.call('HDEL', P..':e', id)
  redis.call('HDEL', P..':et', id)
  return true
end
local function unlock(P, key)
  redis.call('ZREM', P..':lk', key); redis.call('HDEL', P..':lo', key)
  redis.call('HDEL', P..':hb', key)
end

-- entries queued for parked keys (robots.txt failed: they wait for its retry, and the crawl
-- does not wait for them); keys whose time has come count again
local function parked_entries(P, now)
  redis.call('ZREMRANGEBYSCORE', P..':pk', '-inf', now)
  local n = 0
  for _, key in ipairs(redis.call('ZRANGE', P..':pk', 0, 999)) do
    n = n + redis.call('ZCARD', P..':q:'..key) + redis.call('ZCARD', P..':f:'..key)
  end
  return n
end
