-- KEYS[1]: the block; KEYS[2]: its claims, the fingerprints admitted here and not yet
-- confirmed pushed into the frontier, scored by the time of their admission (one slot).
-- ARGV[1]: k; ARGV[2]: seconds after which a claim not confirmed is its dead worker's (0: no
-- claims kept); ARGV[3]: claims kept at most; then per fingerprint its name, whether this is
-- a second look ('1') and k positions.
-- Returns per fingerprint: 1 new (claimed by the caller); 0 seen; 3 seen, its claim not yet
-- confirmed (look again later); 2 at a second look, the claim still there and older than the
-- claims' time (its worker died between admission and push): new again, claimed by the caller.
local k = tonumber(ARGV[1])
local stale = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local now = 0
if stale > 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local out = {}
local claimed = false
for i = 4, #ARGV, k + 2 do
  local new = 0
  for j = i + 2, i + k + 1 do
    if redis.call('SETBIT', KEYS[1], ARGV[j], 1) == 0 then new = 1 end
  end
  if stale > 0 then
    if new == 0 then
      local since = redis.call('ZSCORE', KEYS[2], ARGV[i])
      if since then
        if ARGV[i + 1] == '1' and tonumber(since) < now - stale then new = 2 else new = 3 end
      end
    end
    if new == 1 or new == 2 then
      redis.call('ZADD', KEYS[2], now, ARGV[i])
      claimed = true
    end
  end
  out[#out + 1] = new
end
if claimed and redis.call('ZCARD', KEYS[2]) > cap then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -cap - 1)
end
return out
