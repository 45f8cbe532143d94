import type { JournalRecord } from '@payhooks/core'
import { encodeLine, HOUR, type JournalKeys, MINUTE, ROUTINE } from './journal-layout.js'

/** Events per index bucket before the hour's index grows: under the 128 entries of a listpack-encoded hash. */
const FILL = 80

// A batch's writes, one shard's per KEYS entry (its meta hash `…m`; the shard's other keys are built from that name,
// all in its slot). ARGV: now, retention, answers kept per event, then per shard its records, one a line (a text holds
// no raw line break; see encodeLine). A record already indexed under its event (the batch written again) is skipped.
// Returns how many records it kept.
export const WRITE_SCRIPT = `
local now, retention, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local HOUR, FILL, US, RS = ${HOUR}, ${FILL}, '\\31', '\\30'
local digits = '0123456789abcdefghijklmnopqrstuvwxyz'
local function b36(n)
  local s = ''
  repeat
    local d = n % 36
    s = string.sub(digits, d + 1, d + 1) .. s
    n = (n - d) / 36
  until n == 0
  return s
end
local function int(n) return string.format('%.0f', n) end
local function prune(key, oldest)
  local names = redis.call('HKEYS', key)
  for _, name in ipairs(names) do
    if tonumber(string.sub(name, 2)) < oldest then redis.call('HDEL', key, name) end
  end
end
local kept = 0
for g = 1, #KEYS do
  local meta = KEYS[g]
  local base = string.sub(meta, 1, -2)
  local oldest = math.floor((now - retention) / HOUR)
  local tops, gens, late, expires, counts, codes = {}, {}, {}, {}, {}, {}
  local function code(hour, value)
    local key = base .. 'd:' .. hour
    local known = codes[key .. US .. value]
    if known then return known end
    known = redis.call('HGET', key, 's' .. value)
    if not known then
      known = b36(redis.call('HINCRBY', key, '#', 1))
      redis.call('HSET', key, 's' .. value, known, 'c' .. known, value)
      redis.call('PEXPIREAT', key, (hour + 2) * HOUR + retention)
    end
    codes[key .. US .. value] = known
    return known
  end
  for line in string.gmatch(ARGV[3 + g], '[^\\n]+') do
    local at, hash, kind, copies, id, outcome, suffix, process, etype, tail =
      string.match(line, '^(%d+)\\31(%d+)\\31(%a)\\31(%d+)\\31(%w+)\\31([^\\31]*)\\31([^\\31]*)\\31([^\\31]*)\\31([^\\31]*)\\31(.*)$')
    at = tonumber(at)
    local hour = math.floor(at / HOUR)
    if (hour + 1) * HOUR + retention > now then
      local gen = gens[hour]
      if not gen then
        local spec = redis.call('HMGET', meta, 'b' .. hour, 'n' .. hour, 'n' .. (hour - 1))
        gen = { sizes = {}, n = tonumber(spec[2]) or 0 }
        if spec[1] then
          for size in string.gmatch(spec[1], '%d+') do gen.sizes[#gen.sizes + 1] = tonumber(size) end
        else
          gen.sizes[1] = math.max(1, math.ceil((tonumber(spec[3]) or 0) / FILL))
          redis.call('HSET', meta, 'b' .. hour, gen.sizes[1])
          prune(meta, oldest)
          prune(base .. 'l', oldest)
        end
        gens[hour] = gen
      end
      local stream = base .. kind
      local n = tonumber(hash)
      local known, bucket, refs = false, nil, nil
      for i, size in ipairs(gen.sizes) do
        local key = base .. 'i:' .. hour .. ':' .. size .. ':' .. (n % size)
        local value = redis.call('HGET', key, hash)
        if value then
          for ref in string.gmatch(value, '[^,]+') do
            local k, off, seq = string.match(ref, '^(%a)(%w+)%-?(%w*)$')
            local entry = int(hour * HOUR + tonumber(off, 36)) .. '-' .. (seq == '' and '0' or tonumber(seq, 36))
            local found = redis.call('XRANGE', base .. k, entry, entry)
            if found[1] then
              local text = found[1][2][2]
              if string.sub(text, 1, 1) == '[' then
                if suffix == '' and cjson.decode(text)[1] == id then known = true end
              elseif suffix ~= '' and string.sub(text, 1, #suffix + 1) == suffix .. US then
                local was = string.match(text, '^[^\\31]*\\31[^\\31]*\\31([^\\31]*)')
                local d = base .. 'd:' .. math.floor(tonumber(string.match(found[1][1], '^(%d+)')) / HOUR)
                if redis.call('HGET', d, 'c' .. was) == process then known = true end
              end
            end
          end
        end
        if i == #gen.sizes then bucket, refs = key, value end
      end
      if not known then
        kept = kept + 1
        -- The entry's id, explicit (Redis 6.2 takes no "<ms>-*"): its time, or after the stream's newest entry.
        local top = tops[kind]
        if not top then
          local newest = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
          top = { 0, -1 }
          if newest[1] then
            local m, q = string.match(newest[1][1], '^(%d+)%-(%d+)$')
            top = { tonumber(m), tonumber(q) }
          end
        end
        local ms, seq = at, 0
        if at <= top[1] then ms, seq = top[1], top[2] + 1 end
        local text = tail
        if suffix ~= '' then
          local idHour = math.floor(ms / HOUR)
          text = suffix .. US .. (ms > at and b36(ms - at) or '') .. US .. code(idHour, process) .. US .. code(idHour, etype) .. US .. tail
        end
        redis.call('XADD', stream, int(ms) .. '-' .. int(seq), 'd', text)
        tops[kind] = { ms, seq }
        local idHour = math.floor(ms / HOUR)
        if ms - at > (late[idHour] or 0) then late[idHour] = ms - at end
        local ref = kind .. b36(ms - hour * HOUR) .. (seq > 0 and ('-' .. b36(seq)) or '')
        if refs then
          local list = {}
          for r in string.gmatch(refs, '[^,]+') do list[#list + 1] = r end
          list[#list + 1] = ref
          while #list > keep do table.remove(list, 1) end
          ref = table.concat(list, ',')
        else
          gen.n = gen.n + 1
          redis.call('HSET', meta, 'n' .. hour, gen.n)
          local size, before = gen.sizes[#gen.sizes], 0
          for i = 1, #gen.sizes - 1 do before = before + gen.sizes[i] * FILL end
          if gen.n - before > size * FILL then
            gen.sizes[#gen.sizes + 1] = size * 4
            redis.call('HSET', meta, 'b' .. hour, table.concat(gen.sizes, ','))
          end
        end
        redis.call('HSET', bucket, hash, ref)
        local expireAt = (hour + 1) * HOUR + retention
        expires[bucket] = expireAt
        local count = base .. 'c:' .. hour
        expires[count] = expireAt
        local fields = counts[count] or {}
        counts[count] = fields
        local field = math.floor(at / ${MINUTE}) .. ':' .. outcome
        fields[field] = (fields[field] or 0) + tonumber(copies)
      end
    end
  end
  for count, fields in pairs(counts) do
    for field, n in pairs(fields) do redis.call('HINCRBY', count, field, n) end
  end
  for key, at in pairs(expires) do redis.call('PEXPIREAT', key, at) end
  for kind in pairs(tops) do
    redis.call('XTRIM', base .. kind, 'MINID', '~', int(now - retention))
    redis.call('PEXPIRE', base .. kind, retention + 2 * HOUR)
  end
  for idHour, ms in pairs(late) do
    local was = tonumber(redis.call('HGET', base .. 'l', 'h' .. idHour)) or 0
    if ms > was then redis.call('HSET', base .. 'l', 'h' .. idHour, ms) end
  end
  if next(gens) then redis.call('PEXPIRE', meta, retention + 2 * HOUR) end
  if next(late) then redis.call('PEXPIRE', base .. 'l', retention + 2 * HOUR) end
end
return kept`

/** What the writer needs: the keys, the options, and how to send (each call bounded by `commandTimeoutMs`). */
export interface WriteContext {
  keys: JournalKeys
  retentionMs: number
  maxAnswersPerEvent: number
  cluster: boolean
  call<T>(work: () => Promise<T>, what: string): Promise<T>
  script(...keysThenArgs: (string | number)[]): Promise<number>
}

/**
 * Writes a batch: its records grouped by shard, each on a line with what the script needs to route it. One script call
 * for the whole batch on a standalone Redis (one command: the cost per answer of a command of its own would be the
 * journal's cost); on a Cluster one per shard (each touches one slot), sent together.
 */
export function journalWriter(context: WriteContext) {
  const { keys: k, retentionMs, maxAnswersPerEvent, cluster } = context
  return async (records: readonly JournalRecord[]): Promise<void> => {
    const now = Date.now()
    const byShard = new Map<number, string[]>()
    for (const record of records) {
      if ((Math.floor(record.at / HOUR) + 1) * HOUR + retentionMs <= now) continue
      const shard = k.shardOf(record.eventId)
      const lines = byShard.get(shard) ?? []
      byShard.set(shard, lines)
      const stream = ROUTINE.has(record.outcome) ? 'r' : 'n'
      lines.push(encodeLine(record, k.indexHash(record.eventId), stream))
    }
    if (byShard.size === 0) return
    const groups = [...byShard]
    const send = (part: [number, string[]][]) =>
      context.script(
        part.length,
        ...part.map(([shard]) => k.metaKey(shard)),
        now,
        retentionMs,
        maxAnswersPerEvent,
        ...part.map(([, lines]) => lines.join('\n')),
      )
    await context.call(async () => {
      if (cluster) await Promise.all(groups.map((group) => send([group])))
      else await send(groups)
    }, 'a journal write got no reply from Redis')
  }
}
