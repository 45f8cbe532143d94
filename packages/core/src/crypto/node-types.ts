/** The parts of `node:crypto` the Node provider uses (types only: nothing is imported at run time). */
export type NodeCrypto = Pick<typeof import('node:crypto'), 'createHmac' | 'createHash' | 'timingSafeEqual'> &
  Partial<Pick<typeof import('node:crypto'), 'createSecretKey' | 'hash'>>

/** The part of `node:buffer`'s `Buffer` the Node provider uses. */
export type NodeBuffer = Pick<typeof import('node:buffer').Buffer, 'from' | 'alloc'>
