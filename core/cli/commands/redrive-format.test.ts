import { describe, expect, it } from 'vitest';
import type { RedrivePlan, RedriveResult } from '../../../shared/redrive/types';
import { formatPlan, formatResult } from './redrive';

/** A sentence longer than a table cell, whose end carries the part a reader acts on. */
const long = (tail: string): string => `${'The broker said something long about this queue, '.repeat(8)}${tail}`;

function plan(over: Partial<RedrivePlan>): RedrivePlan {
  return {
    dlq: { id: 'redis:list:dlq', name: 'dlq', depth: 3 },
    examined: 3,
    toMove: 3,
    skipped: [],
    toSkip: 0,
    failed: 0,
    cannotMove: [],
    maxBodyBytes: 1024,
    notFoundIds: [],
    notFoundCount: 0,
    targets: [],
    loops: [],
    warnings: [],
    groups: [],
    wastedRetries: 0,
    samples: [],
    native: { support: null, wouldUse: false, why: 'no native move' },
    filter: 'all',
    stoppedBecause: 'end',
    notes: [],
    ...over,
  } as RedrivePlan;
}

describe('redrive dry run: a loop target', () => {
  // With --confirm-loop given, the dry run still said "pass --confirm-loop to move there anyway" (fresh-user pass).
  it('asks for --confirm-loop, or says it was given', () => {
    const loops = [{ queueId: 'list:dlq', name: 'dlq', loop: 'dlq is the DLQ itself' }] as unknown as RedrivePlan['loops'];
    expect(formatPlan(plan({ loops }))).toContain('LOOP: dlq is the DLQ itself — pass --confirm-loop to move there anyway');
    const confirmed = formatPlan(plan({ loops }), undefined, true);
    expect(confirmed).toContain('LOOP: dlq is the DLQ itself — confirmed with --confirm-loop: messages move there anyway');
    expect(confirmed).not.toContain('pass --confirm-loop');
  });
});

describe('redrive text output keeps whole warnings and notes', () => {
  it('prints the end of a long dry-run warning, note and native-move reason', () => {
    const text = formatPlan(plan({ warnings: [long('WARNING-TAIL: stop the consumer first.')], notes: [long('NOTE-TAIL: run it again.')], native: { support: null, wouldUse: false, why: long('WHY-TAIL.') } }));
    expect(text).toContain('WARNING-TAIL: stop the consumer first.');
    expect(text).toContain('NOTE-TAIL: run it again.');
    expect(text).toContain('WHY-TAIL.');
  });

  it('prints the end of a long result note, still escaped for the terminal', () => {
    const r = { mode: 'client-side', mechanism: null, moved: 1, skipped: 0, failed: 0, possibleDuplicates: 0, examined: 1, dlqName: 'dlq', targets: [], skipReasons: [], notFoundCount: 0, notFoundIds: [], backupPath: null, auditId: null, notes: [long('RESULT-TAIL \u001b[31m')] } as unknown as RedriveResult;
    const text = formatResult(r, 'completed');
    expect(text).toContain('RESULT-TAIL');
    expect(text).not.toContain('\u001b');
  });
});
