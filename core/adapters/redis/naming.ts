/**
 * True when a queue name says it is a dead-letter queue (`orders-dlq`, `orders.dead-letter`,
 * `emails:deadletter`, `dlq:orders`). Redis has no dead-letter configuration, so the name is all we have.
 */
export function looksLikeDeadLetterName(name: string): boolean {
  return /(^|[-_.:])(dlq|dlx|dead[-_.]?letters?|deadletters?)($|[-_.:])/i.test(name);
}
