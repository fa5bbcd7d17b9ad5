/** One page of a list endpoint: `{ data, nextCursor }`. */
export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/**
 * The items of a cursor-paginated list, fetched page by page as they are consumed:
 *
 *   for await (const webhook of client.webhooks.list({ limit: 100 })) { … }
 *   for await (const page of client.webhooks.list().pages()) { … }
 *
 * Nothing is requested until iteration starts; each iteration starts from the first page again.
 * The end of the list is a null `nextCursor`, never the size of a page: some lists (messages)
 * answer short or empty pages while more items exist.
 */
export class Paginated<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
    private readonly startCursor?: string,
  ) {}

  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.startCursor;
    do {
      const page = await this.fetchPage(cursor);
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item, at most `max` of them (a guard against draining a huge list by mistake). */
  async toArray(max = 10_000): Promise<T[]> {
    const items: T[] = [];
    if (max <= 0) return items;
    // Stop as soon as `max` is reached, without requesting the page after it.
    for await (const item of this) {
      items.push(item);
      if (items.length >= max) break;
    }
    return items;
  }
}
