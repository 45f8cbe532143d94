/** One statement with `?` placeholders, answering mysql2's result: rows for a SELECT, a result header otherwise. */
export type Run = (sql: string, values?: unknown[]) => Promise<unknown>

/** Something mysql2 runs statements on: a promise `Pool` or `PoolConnection`. */
export interface Queryable {
  query(sql: string, values?: unknown): Promise<[unknown, unknown]>
}

/** `Run` on a pool or a connection: the text protocol, values escaped by mysql2. */
export const runOn =
  (queryable: Queryable): Run =>
  async (sql, values = []) =>
    (await queryable.query(sql, values))[0]
