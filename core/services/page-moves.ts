import type { PeekPage } from '../../shared/domain';

/** Inexact moves whose own sentences are kept; later ones are only counted. */
const MAX_KEPT = 3;

/**
 * Collects the {@link PeekPage.moved} reports of one paged read (inspect, export) and words them
 * for its result: re-aligned moves are a reassuring note (nothing skipped or read twice), moves
 * that could not be re-aligned make the read inexact (`reason()`: the read is partial).
 */
export class PageMoves {
  private realigned = 0;
  private lastRealigned: string | null = null;
  private readonly inexact: string[] = [];
  private inexactCount = 0;
  /** Sum of `uncertain` over the inexact moves; null once one of them was unknown. */
  private uncertain: number | null = 0;

  /** @param queueName the queue read, for the sentences. */
  constructor(private readonly queueName: string) {}

  /** Takes note of one page's `moved` (nothing when absent). */
  add(page: Pick<PeekPage, 'moved'>): void {
    const m = page.moved;
    if (m === undefined) return;
    if (m.realigned) {
      this.realigned++;
      this.lastRealigned = m.note;
      return;
    }
    this.inexactCount++;
    if (this.inexact.length < MAX_KEPT) this.inexact.push(m.note);
    this.uncertain = this.uncertain === null || m.uncertain === null ? null : this.uncertain + m.uncertain;
  }

  /** Why the read is not exact (every inexact move in words, with how many entries may differ), or null when it is. */
  reason(): string | null {
    if (this.inexactCount === 0) return null;
    const more = this.inexactCount - this.inexact.length;
    const count =
      this.inexactCount > 1
        ? ` In all, ${this.queueName} moved ${String(this.inexactCount)} times in a way the read could not follow${more > 0 ? ` (${String(more)} not listed)` : ''}; ${this.uncertain === null ? 'an unknown number of' : `up to ${String(this.uncertain)}`} entries may have been skipped or read twice.`
        : '';
    return `${this.inexact.join(' ')}${count}`;
  }

  /** Sentences for people: the re-aligned moves (one summary), then the reason, if any. */
  notes(): string[] {
    const out: string[] = [];
    if (this.realigned === 1 && this.lastRealigned !== null) out.push(this.lastRealigned);
    else if (this.realigned > 1) {
      out.push(
        `${this.queueName} moved ${String(this.realigned)} times while it was read (entries pushed or popped at the end read from); each time reading re-aligned on the last entry read, so none was skipped or read twice there.`,
      );
    }
    const r = this.reason();
    if (r !== null) out.push(r);
    return out;
  }
}
