/** What replaces a credential. */
export const REDACTED = '[redacted]'

/**
 * Shortest secret that is redacted wherever it appears. A shorter one (a 2-character API key) cannot
 * be told apart from ordinary words, so every occurrence could not be removed without mangling the
 * text, and redacting it only where it looks like a credential would leak a lone echo of it; server
 * text is then withheld from errors altogether.
 */
export const MIN_REDACTABLE_LENGTH = 8
