-- Entries done with, in one shard: the second round trip of an exchange, once every shard
-- took the exchange's pushes.  KEYS[1]: the shard's entry hash (names the slot).  ARGV: the
-- shard's prefix, then the entries ('token#id|key': see ``complete``).  Returns the entries
-- outstanding in the shard, and the completions refused (their lease was lost).
local P = ARGV[1]
local refused = 0
for i = 2, #ARGV do
  if not complete(P, ARGV[i]) then refused = refused + 1 end
end
return {redis.call('HLEN', P..':e'), refused}
