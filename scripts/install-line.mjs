// The `npm install` line for an app that uses some of the packages, before they are on a registry (`pnpm pack:all
// --for express,redis`). Until they are published the @payhooks scope on the public registry is not ours: npm asks
// it for every @payhooks/* dependency not given as a tarball (the CLI's @payhooks/client failed with E404, and
// whoever registered the scope could serve their own). So the line names the tarball of every @payhooks package
// needed, transitively, and each required peer pinned to the newest major its range supports: a bare `ioredis`
// takes the registry's latest major, which the peer range may not allow (ERESOLVE). An optional peer that the
// package's quick start needs on Node (NODE_SERVERS: Hono's server for Node) is on the line too: the line is for a
// Node app, and without it the Hono quick start fails at its first import.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { publishedPackages } from './packages.mjs'

/** Optional peers a Node app needs to run the package at all, so the install line names them. */
const NODE_SERVERS = new Set(['@hono/node-server'])

/**
 * @param {string[]} wanted package names, with or without the scope: `express`, `@payhooks/redis`
 * @param {string} packs the folder of the tarballs, as it is to appear in the line
 * @returns {string[]} the arguments after `npm install`
 */
export function installArgs(wanted, packs) {
  const published = new Map(publishedPackages().map((p) => [p.name, p]))
  const manifest = (name) => JSON.parse(readFileSync(join(published.get(name).dir, 'package.json'), 'utf8'))
  const needed = []
  const visit = (name) => {
    if (needed.includes(name)) return
    if (!published.has(name))
      throw new Error(`${name} is not a published package (${[...published.keys()].join(', ')})`)
    needed.push(name)
    for (const dep of Object.keys(manifest(name).dependencies ?? {})) if (dep.startsWith('@payhooks/')) visit(dep)
  }
  for (const name of wanted) visit(name.startsWith('@payhooks/') ? name : `@payhooks/${name}`)
  needed.sort()
  const peers = new Map()
  for (const name of needed) {
    const { peerDependencies = {}, peerDependenciesMeta = {} } = manifest(name)
    for (const [peer, range] of Object.entries(peerDependencies)) {
      if (peerDependenciesMeta[peer]?.optional && !NODE_SERVERS.has(peer)) continue
      peers.set(peer, [...(peers.get(peer) ?? []), range])
    }
  }
  const pinned = [...peers]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([peer, ranges]) => `${peer}@${newestMajor(peer, ranges)}`)
  return [...needed.map((name) => `${packs}/${published.get(name).file}`), ...pinned]
}

/** The newest major every range allows, as the `^x.y.z` alternative of the range that asks most of it. */
function newestMajor(peer, ranges) {
  const alternatives = ranges.map((range) =>
    range.split('||').map((alternative) => {
      const caret = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(alternative.trim())
      if (!caret) throw new Error(`${peer}: peer range ${range} is not made of ^x.y.z alternatives`)
      return caret.slice(1).map(Number)
    }),
  )
  const majors = alternatives[0]
    .map(([major]) => major)
    .filter((major) => alternatives.every((a) => a.some(([m]) => m === major)))
  if (majors.length === 0) throw new Error(`${peer}: no major in all of ${ranges.join(', ')}`)
  const major = Math.max(...majors)
  const floor = alternatives
    .flat()
    .filter(([m]) => m === major)
    .reduce((a, b) => (a[1] > b[1] || (a[1] === b[1] && a[2] >= b[2]) ? a : b))
  return `^${floor.join('.')}`
}
