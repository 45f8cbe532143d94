// A whole `pnpm test` as parts: the main pass's files and each matrix pass's (scripts/test-matrix.mjs) split into
// lists of about equal expected time (scripts/test-durations.json, seconds per file from a quiet run), run a few at
// once, each part on a set of servers its slot keeps (scripts/test-services.mjs) and one file at a time, as a pass
// alone would. One vitest with one worker left the machine half idle for most of the run: its files mostly wait on
// servers, browsers and child processes.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

const root = join(import.meta.dirname, '..')
/** A vitest run's own start and a file's import, on top of its tests' time. */
const FILE_OVERHEAD = 0.7
/** The type tests (`*.test-d.ts`): one tsc run of some 30 s, so they go to one part together. */
const TYPE_TESTS_SECONDS = 30

/** Every test file vitest's config selects, relative to the root, type tests included. */
export function listTestFiles() {
  const listed = spawnSync(
    process.execPath,
    [join(root, 'node_modules/vitest/vitest.mjs'), 'list', '--filesOnly', '--json'],
    { cwd: root, encoding: 'utf8' },
  )
  if (listed.status !== 0) throw new Error(`vitest list exited ${listed.status}: ${listed.stderr}`)
  return JSON.parse(listed.stdout)
    .map(({ file }) => relative(root, file))
    .sort()
}

function readDurations() {
  try {
    return JSON.parse(readFileSync(join(import.meta.dirname, 'test-durations.json'), 'utf8'))
  } catch {
    return {}
  }
}

/**
 * `files` in at most `n` parts of about equal expected time, longest file first, each to the lightest part (a file
 * not in the durations counts as the median one). The type tests stay together in one part, which runs them.
 * @returns {{ files: string[], seconds: number, typecheck: boolean }[]}
 */
export function splitFiles(files, n, durations = readDurations()) {
  const known = Object.values(durations).sort((a, b) => a - b)
  const median = known.length ? known[Math.floor(known.length / 2)] : 1
  const types = files.filter((file) => file.endsWith('.test-d.ts'))
  const units = files
    .filter((file) => !file.endsWith('.test-d.ts'))
    .map((file) => ({ files: [file], seconds: (durations[file] ?? median) + FILE_OVERHEAD }))
  if (types.length) units.push({ files: types, seconds: TYPE_TESTS_SECONDS, typecheck: true })
  const parts = Array.from({ length: Math.max(1, n) }, () => ({ files: [], seconds: 0, typecheck: false }))
  for (const unit of units.sort((a, b) => b.seconds - a.seconds)) {
    const lightest = parts.reduce((min, part) => (part.seconds < min.seconds ? part : min))
    lightest.files.push(...unit.files)
    lightest.seconds += unit.seconds
    lightest.typecheck ||= unit.typecheck === true
  }
  return parts.filter((part) => part.files.length > 0)
}

/**
 * Runs `jobs` (each `() => Promise`, given the slot it runs on) on `slots`, at most one job per slot at a time, in
 * the order given; resolves with their results in that order.
 */
export async function runOnSlots(jobs, slots) {
  const results = new Array(jobs.length)
  let next = 0
  await Promise.all(
    slots.map(async (slot) => {
      while (next < jobs.length) {
        const i = next++
        results[i] = await jobs[i](slot)
      }
    }),
  )
  return results
}
