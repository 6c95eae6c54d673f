import { reprocessJob } from 'bullmq/dist/cjs/scripts/reprocessJob-9';

/**
 * Lua scripts of the Redis redrive mover (core/adapters/redis/redrive.ts). Each runs one batch
 * atomically: Redis runs a script to the end before serving another command
 * (https://redis.io/docs/latest/develop/interactive/programmability/eval-intro/), and since
 * Redis 7 its writes are replicated and appended to the AOF as one MULTI/EXEC, so a crash or a
 * restart sees a batch either fully applied or not at all. Every script publishes to the target
 * BEFORE it removes from the DLQ, so even a script aborted by an error midway leaves each message
 * in at least one place.
 */

/**
 * Moves one window of a list DLQ. It first finds the elements the client read (so what moves is
 * what was decided and backed up), then appends the moved elements to their targets in DLQ order
 * (RPUSH: the list adapter reads index 0 = the left end as the head, so the target's tail is its
 * right end), then removes them from the DLQ:
 * - window at index 0: LTRIM the window off and LPUSH the kept elements back in their order;
 * - window further in (skipped elements before it): LSET each moved element to a per-run
 *   tombstone, then LREM that many tombstones from the head.
 *
 * Finding the window: it is where it was read (offset ARGV[1]) unless another client popped at the
 * head since (a consumer of the DLQ list: LPOP, BLPOP, LMOVE … LEFT). What it accepts is what pops
 * at the head (p of them) and pushes at the tail (t, e.g. new dead letters) explain, the list then
 * being the old one from index p on, then the t new elements (length ARGV[4] − p + t now):
 * - it tries each shift p = 1 … offset + n − 1 (at most ARGV[3] positions left of the offset,
 *   which bounds what it reads) and uses the one at which the window's surviving elements match
 *   byte for byte; when p passes the offset, the window's first p − offset elements were taken;
 * - elements counted as taken must not be in the list as the pops leave it: not among the elements
 *   read around the window (other than the survivors), nor among the t elements pushed at the tail
 *   since the read (a consumer that pushed one back, or rotates the list); t must be 0 … ARGV[3];
 * - when no shift matches, the whole window counts as taken only if none of its elements is among
 *   the elements from index 0 to the window's old end, and neither its first nor its last element
 *   is anywhere in the list (LPOS, Redis ≥ 6.0.6: elements pushed at the head move the window right).
 * It refuses, changing nothing, when two shifts match (identical contents: which ones were taken
 * cannot be told) or any check fails. The checks are byte comparisons: a taken element's exact
 * copy that is another client's push at the tail is refused, an older copy elsewhere is not one.
 *
 * KEYS[1] the DLQ list, KEYS[2..] the target lists.
 * ARGV[1] window offset (index of its first element when read), ARGV[2] tombstone, ARGV[3] the
 * largest shift looked for, ARGV[4] the list's length when the window was read, then per element:
 * target index into KEYS (0 = keep in the DLQ), the element's exact bytes.
 * Returns {1, moved, taken, at}: `taken` = how many of the window's first elements another client
 * took (not moved, not counted in moved), `at` = the index the window's first remaining element
 * was found at. Refusals change nothing: {-1, found} when the window is shorter than expected and
 * no pops explain it; {-2, i} when element i (1-based) differs and no pops explain it; {-3, p}
 * when two shifts match (p the second); {-4, i} when element i counted as taken may still be in
 * the list; {-5, 0} when the server has no LPOS (before Redis 6.0.6).
 */
export const LIST_MOVE_LUA = `
local src = KEYS[1]
local off = tonumber(ARGV[1])
local tomb = ARGV[2]
local maxShift = tonumber(ARGV[3])
local len0 = tonumber(ARGV[4])
local n = (#ARGV - 4) / 2
local function el(i) return ARGV[4 + 2 * i] end
local function tgt(i) return tonumber(ARGV[3 + 2 * i]) end
local cur = redis.call('LRANGE', src, off, off + n - 1)
local function unexplained()
  if #cur ~= n then return {-1, #cur} end
  for k = 1, n do
    if cur[k] ~= el(k) then return {-2, k} end
  end
  return {-2, 1}
end
local j = 0
local intact = #cur == n
if intact then
  for i = 1, n do
    if cur[i] ~= el(i) then intact = false; break end
  end
end
if not intact then
  -- Shifted left by pops at the head? Read from up to maxShift positions left of the offset.
  local base = off - maxShift
  if base < 0 then base = 0 end
  local wide = redis.call('LRANGE', src, base, off + n - 1)
  local function fits(o, jj)
    if o - base + (n - jj) > #wide then return false end
    for i = jj + 1, n do
      if wide[o - base + i - jj] ~= el(i) then return false end
    end
    return true
  end
  local found = 0
  local fo, fj = 0, 0
  for p = 1, off - base + n - 1 do
    local o = off - p
    local jj = 0
    if o < 0 then jj = -o; o = 0 end
    if o >= base and fits(o, jj) then
      found = found + 1
      if found > 1 then return {-3, p} end
      fo, fj = o, jj
    end
  end
  local len1 = redis.call('LLEN', src)
  if found == 0 then
    -- The whole window taken? Only with everything before it popped, and none of it left.
    if base > 0 then return unexplained() end
    local set = {}
    for i = 1, n do set[el(i)] = i end
    for _, x in ipairs(wide) do
      if set[x] then return unexplained() end
    end
    for _, i in ipairs({1, n}) do
      local r = redis.pcall('LPOS', src, el(i))
      if type(r) == 'table' and r.err then return {-5, 0} end
      if r then return unexplained() end
    end
    fo, fj = 0, n
  elseif fj > 0 then
    -- Pops p = offset + fj; pushes at the tail t = len1 - (len0 - p).
    local t = len1 - (len0 - (off + fj))
    if t < 0 or t > maxShift then return {-4, 1} end
    local set = {}
    for i = 1, fj do set[el(i)] = i end
    for x = 1, #wide do
      local i = set[wide[x]]
      if i and (x - 1 < fo or x - 1 > fo + n - fj - 1) then return {-4, i} end
    end
    if t > 0 then
      for _, x in ipairs(redis.call('LRANGE', src, -t, -1)) do
        if set[x] then return {-4, set[x]} end
      end
    end
  end
  off, j = fo, fj
  cur = {}
  for i = j + 1, n do cur[i] = el(i) end
end
local per = {}
local kept = {}
local moved = 0
for i = j + 1, n do
  local t = tgt(i)
  if t > 0 then
    local l = per[t]
    if l == nil then l = {}; per[t] = l end
    l[#l + 1] = cur[i]
    moved = moved + 1
  else
    kept[#kept + 1] = cur[i]
  end
end
for t, l in pairs(per) do
  redis.call('RPUSH', KEYS[1 + t], unpack(l))
end
if moved == 0 then return {1, 0, j, off} end
if off == 0 then
  redis.call('LTRIM', src, n - j, -1)
  if #kept > 0 then
    local rev = {}
    for i = #kept, 1, -1 do rev[#rev + 1] = kept[i] end
    redis.call('LPUSH', src, unpack(rev))
  end
else
  for i = j + 1, n do
    if tgt(i) > 0 then redis.call('LSET', src, off + i - j - 1, tomb) end
  end
  redis.call('LREM', src, moved, tomb)
end
return {1, moved, j, off}
`;

/**
 * Moves stream entries: for each id, reads the entry from the DLQ stream (XRANGE id id), XADDs
 * its fields in the same order to the target with the redrive counter field set to its old value
 * + 1 (appended when absent), then XDELs it from the DLQ and XACKs it in every consumer group of
 * the DLQ (so no pending entries list keeps pointing at a deleted entry).
 *
 * KEYS[1] the DLQ stream, KEYS[2..] the target streams.
 * ARGV[1] the counter field name, ARGV[2] the "recent delivery" idle limit in ms, then pairs:
 * entry id, target index into KEYS — prefixed with `g` (guarded) when the entry was not pending
 * with an idle time below that limit when it was read: a guarded entry that a consumer of some
 * group now holds with an idle time below the limit (XPENDING; delivered since the read, e.g. by
 * XREADGROUP or XCLAIM) is not moved.
 * Returns per id: the new entry id; "" when the entry is no longer in the DLQ (nothing done);
 * "!<error>" when XADD to the target failed (the entry stays in the DLQ); or
 * "~<group>\0<consumer>\0<idle ms>" when a guarded entry was delivered since it was read (it stays).
 */
export const STREAM_MOVE_LUA = `
local src = KEYS[1]
local field = ARGV[1]
local recentMs = tonumber(ARGV[2])
local groups = {}
local info = redis.call('XINFO', 'GROUPS', src)
for _, g in ipairs(info) do
  for j = 1, #g, 2 do
    if g[j] == 'name' then groups[#groups + 1] = g[j + 1] end
  end
end
local out = {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local t = ARGV[i + 1]
  local guard = string.sub(t, 1, 1) == 'g'
  if guard then t = string.sub(t, 2) end
  local held = nil
  local e = redis.call('XRANGE', src, id, id)
  if #e > 0 and guard then
    for _, g in ipairs(groups) do
      local p = redis.call('XPENDING', src, g, id, id, 1)
      if #p > 0 and tonumber(p[1][3]) < recentMs then
        held = '~' .. g .. '\\0' .. p[1][2] .. '\\0' .. p[1][3]
        break
      end
    end
  end
  if #e == 0 then
    out[#out + 1] = ''
  elseif held then
    out[#out + 1] = held
  else
    local f = e[1][2]
    local found = false
    for j = 1, #f, 2 do
      if f[j] == field then
        f[j + 1] = tostring((tonumber(f[j + 1]) or 0) + 1)
        found = true
      end
    end
    if not found then
      f[#f + 1] = field
      f[#f + 1] = '1'
    end
    local r = redis.pcall('XADD', KEYS[1 + tonumber(t)], '*', unpack(f))
    if type(r) == 'table' and r.err then
      out[#out + 1] = '!' .. r.err
    else
      redis.call('XDEL', src, id)
      for _, g in ipairs(groups) do redis.call('XACK', src, g, id) end
      out[#out + 1] = r
    end
  end
end
return out
`;

/**
 * Retries BullMQ jobs of one queue in one script: BullMQ's own `reprocessJob` script (what
 * `Job.retry()` runs, taken from the installed bullmq package so its semantics — paused queues,
 * priorities, markers, the `waiting` event, parent dependencies — are exactly BullMQ's), called
 * once per job with resetAttemptsMade and resetAttemptsStarted = "1" (a fresh attempt budget, as
 * `Job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true })`), and, when it
 * succeeds, HINCRBY of the redrive counter field in the job hash (job data is left untouched).
 *
 * KEYS[1] events stream, KEYS[2] state key (failed/completed), KEYS[3] wait, KEYS[4] meta,
 * KEYS[5] active, KEYS[6] marker, KEYS[7] prioritized, KEYS[8] priority counter.
 * ARGV[1] job key prefix ("<prefix>:<name>:"), ARGV[2] counter field, ARGV[3] prev state,
 * ARGV[4] the field reprocessJob clears (failedReason/returnvalue), then pairs: job id, "LPUSH"/"RPUSH".
 * Returns per job BullMQ's code: 1 moved to wait, -1 job gone, -3 not in that state.
 */
export const BULLMQ_RETRY_LUA = `
local function reprocess(KEYS, ARGV)
${reprocessJob.content}
end
local out = {}
for i = 5, #ARGV, 2 do
  local id = ARGV[i]
  local jobKey = ARGV[1] .. id
  local r = reprocess({jobKey, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]},
    {id, ARGV[i + 1], ARGV[4], ARGV[3], '1', '1'})
  if r == 1 then redis.call('HINCRBY', jobKey, ARGV[2], 1) end
  out[#out + 1] = r
end
return out
`;

/**
 * The part of BullMQ's `reprocessJob` script after its helper functions, as in the installed
 * bullmq (6.7) that {@link BULLMQ_RETRY_BATCH_LUA} was written from. When the installed script's
 * body differs (another bullmq version), the batch script is not used and the mover falls back to
 * {@link BULLMQ_RETRY_LUA}, which runs BullMQ's script itself once per job.
 */
const REPROCESS_JOB_BODY = `local jobKey = KEYS[1]
if rcall("EXISTS", jobKey) == 1 then
  local jobId = ARGV[1]
  if (rcall("ZREM", KEYS[3], jobId) == 1) then
    local attributesToRemove = {}
    if ARGV[5] == "1" then
      table.insert(attributesToRemove, "atm")
    end
    if ARGV[6] == "1" then
      table.insert(attributesToRemove, "ats")
    end
    rcall("HDEL", jobKey, "finishedOn", "processedOn", ARGV[3], unpack(attributesToRemove))
    local isPausedOrMaxed = isQueuePausedOrMaxed(KEYS[5], KEYS[6])
    local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
    -- Standard or priority add
    if priority == 0 then
      addJobInTargetList(KEYS[4], KEYS[7], ARGV[2], isPausedOrMaxed, jobId)
    else
      addJobWithPriority(KEYS[7], KEYS[8], priority, jobId, KEYS[9], isPausedOrMaxed)
    end
    moveChildBackToParentDependencies(jobKey, ARGV[4])
    local maxEvents = getOrSetMaxEvents(KEYS[5])
    -- Emit waiting event
    rcall("XADD", KEYS[2], "MAXLEN", "~", maxEvents, "*", "event", "waiting",
      "jobId", jobId, "prev", ARGV[4]);
    return 1
  else
    return -3
  end
else
  return -1
end
`;

/**
 * BullMQ's own helper functions from the installed `reprocessJob` script (rcall,
 * isQueuePausedOrMaxed, addJobWithPriority, addBaseMarkerIfNeeded, getOrSetMaxEvents,
 * moveChildBackToParentDependencies, …), or null when the script's body is not
 * {@link REPROCESS_JOB_BODY} (then the batch script would no longer match BullMQ's semantics).
 */
export const REPROCESS_JOB_HELPERS: string | null = (() => {
  const at = reprocessJob.content.indexOf('local jobKey = KEYS[1]\n');
  return at > 0 && reprocessJob.content.slice(at) === REPROCESS_JOB_BODY ? reprocessJob.content.slice(0, at) : null;
})();

/**
 * Retries a batch of BullMQ jobs of one queue in one script, with the same end state as running
 * BullMQ's `reprocessJob` (resetAttemptsMade and resetAttemptsStarted "1") once per job in order
 * — i.e. {@link BULLMQ_RETRY_LUA} — plus HINCRBY of the redrive counter field for each job
 * retried, at a fraction of its Redis time (measured here ~2× less): what does not change within
 * the script is read once per batch (paused/maxed, maxLenEvents), list pushes and the marker are
 * one command each, and the batch leaves the state set in one ZREM. BullMQ's helper functions are
 * taken verbatim from the installed script ({@link REPROCESS_JOB_HELPERS}); null when that script
 * changed (the per-job script is used then).
 *
 * Phases, so that even a script aborted by an error midway (a key of the wrong type) leaves every
 * job in its state set or in wait/prioritized — publish before remove, as the other scripts here:
 * 1. read only: ZMSCORE of the batch in the state set (ZSCORE per job before Redis 6.2), per job
 *    HMGET priority and parentKey — BullMQ writes `priority` into every job hash, so only a job
 *    without one needs EXISTS — giving -1 when the hash is gone, -3 when the id is not in the set
 *    (or was already taken in this batch), as reprocessJob checks them;
 * 2. publish: priority 0 → LPUSH/RPUSH of the batch's ids in order (the same list as one push per
 *    job), else BullMQ's addJobWithPriority per job in order (its counter INCR and ZADD); the
 *    marker when BullMQ would add one;
 * 3. remove: ZREM of the batch from the state set;
 * 4. per job: HDEL finishedOn, processedOn, the state's field, atm, ats; BullMQ's
 *    moveChildBackToParentDependencies when the job has a parent; the `waiting` event (XADD with
 *    BullMQ's MAXLEN ~); HINCRBY of the counter.
 *
 * KEYS[1] events stream, KEYS[2] state key (failed/completed), KEYS[3] wait, KEYS[4] meta,
 * KEYS[5] active, KEYS[6] marker, KEYS[7] prioritized, KEYS[8] priority counter.
 * ARGV[1] job key prefix ("<prefix>:<name>:"), ARGV[2] counter field, ARGV[3] prev state,
 * ARGV[4] the field reprocessJob clears (failedReason/returnvalue), ARGV[5] one letter per job,
 * "L" (LPUSH) or "R" (RPUSH, a lifo job), then the job ids.
 * Returns per job BullMQ's code: 1 moved to wait, -1 job gone (its id still in the state set),
 * -3 not in that state; and -4 where BullMQ says -1 but the id is not in the state set either (the
 * job was removed whole), so the caller knows it no longer takes a place in the set.
 */
export const BULLMQ_RETRY_BATCH_LUA: string | null =
  REPROCESS_JOB_HELPERS === null
    ? null
    : `${REPROCESS_JOB_HELPERS}
local base, counterField, prevState, propField, dirs = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local n = #ARGV - 5
local out = {}
if n == 0 then return out end
local ids, keys = {}, {}
for k = 1, n do
  ids[k] = ARGV[5 + k]
  keys[k] = base .. ids[k]
end
-- ZMSCORE (Redis >= 6.2) for the whole batch, else ZSCORE per job.
local ok0, scores = pcall(rcall, "ZMSCORE", KEYS[2], unpack(ids))
if not ok0 then
  scores = {}
  for k = 1, n do scores[k] = rcall("ZSCORE", KEYS[2], ids[k]) end
end
local ok, prio, parent, seen = {}, {}, {}, {}
for k = 1, n do
  -- BullMQ writes "priority" into every job hash, so a value proves the hash exists; else EXISTS decides.
  local f = rcall("HMGET", keys[k], "priority", "parentKey")
  if not f[1] and rcall("EXISTS", keys[k]) ~= 1 then
    if scores[k] then out[k] = -1 else out[k] = -4 end
  elseif not scores[k] or seen[ids[k]] then
    out[k] = -3
  else
    seen[ids[k]] = true
    ok[#ok + 1] = k
    prio[k] = tonumber(f[1]) or 0
    parent[k] = f[2]
    out[k] = 1
  end
end
if #ok == 0 then return out end
local isPausedOrMaxed = isQueuePausedOrMaxed(KEYS[4], KEYS[5])
local lpush, rpush, moved = {}, {}, {}
for _, k in ipairs(ok) do
  local jobId = ids[k]
  moved[#moved + 1] = jobId
  if prio[k] == 0 then
    if string.byte(dirs, k) == 82 then rpush[#rpush + 1] = jobId else lpush[#lpush + 1] = jobId end
  else
    addJobWithPriority(KEYS[6], KEYS[7], prio[k], jobId, KEYS[8], isPausedOrMaxed)
  end
end
for i = 1, #lpush, 1000 do rcall("LPUSH", KEYS[3], unpack(lpush, i, math.min(#lpush, i + 999))) end
for i = 1, #rpush, 1000 do rcall("RPUSH", KEYS[3], unpack(rpush, i, math.min(#rpush, i + 999))) end
if #lpush + #rpush > 0 then addBaseMarkerIfNeeded(KEYS[6], isPausedOrMaxed) end
for i = 1, #moved, 1000 do rcall("ZREM", KEYS[2], unpack(moved, i, math.min(#moved, i + 999))) end
local maxEvents = getOrSetMaxEvents(KEYS[4])
for _, k in ipairs(ok) do
  local jobKey = keys[k]
  rcall("HDEL", jobKey, "finishedOn", "processedOn", propField, "atm", "ats")
  if parent[k] then moveChildBackToParentDependencies(jobKey, prevState) end
  rcall("XADD", KEYS[1], "MAXLEN", "~", maxEvents, "*", "event", "waiting", "jobId", ids[k], "prev", prevState)
  rcall("HINCRBY", jobKey, counterField, 1)
end
return out
`;
