// @vitest-environment jsdom
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen, within } from '@testing-library/react';
import { defaultProjectConfig } from '../../../shared/config/project-config';
import { evaluateAudit } from '../../../shared/audit/evaluate';
import type { SqsQueueFacts } from '../../../shared/audit/types';
import { useStore } from '../store';
import { AuditPage } from './AuditPage';

afterEach(cleanup);

const facts = (name: string): SqsQueueFacts => ({
  kind: 'sqs',
  id: `sqs:http://x/0/${name}`,
  name,
  url: `http://x/0/${name}`,
  arn: `arn:aws:sqs:us-east-1:0:${name}`,
  fifo: false,
  contentBasedDeduplication: null,
  visibilityTimeoutS: 30,
  retentionS: 345_600,
  receiveWaitTimeS: 20,
  maximumMessageSize: 262_144,
  depth: 0,
  inFlight: 0,
  redrivePolicy: null,
  redrivePolicyError: null,
  redriveAllowPolicy: null,
  deadLetterQueue: null,
  deadLetterSources: [],
  isDeadLetterQueue: false,
  sample: null,
  sampleNote: 'message sampling is off',
  dlqCandidate: null,
});

describe('AuditPage', () => {
  it('shows an unused suppression (a typo) as a warning beside the finding it failed to suppress', () => {
    const report = evaluateAudit([{ broker: 'sqs', label: 'sqs://test', servers: [], queues: [facts('notifications')], notes: [] }], {
      config: { ...defaultProjectConfig().audit, suppress: [{ rule: 'sqs.no-redrive-policy', queue: 'notifcations', reason: 'typo' }] },
      measurements: new Map(),
      now: 0,
    });
    useStore.setState({ audits: { c1: { status: 'ready', error: null, report } } });
    render(<AuditPage connectionId="c1" />);
    const note = screen.getByTestId('audit-unused-suppressions');
    expect(within(note).getByText(/Unused suppressions/)).toBeTruthy();
    expect(note.textContent).toContain('audit.suppress[0] · sqs.no-redrive-policy on “notifcations”: queue pattern "notifcations" matches no audited queue; similar: notifications');
    expect(screen.getAllByTestId('audit-finding').map((f) => f.getAttribute('data-target'))).toEqual(['notifications']);
    expect(screen.getByRole('button', { name: 'Run again' })).toBeTruthy();
    expect(document.body.textContent).toContain('1 queue · ');
    expect(document.body.textContent).not.toContain('1 queues');
  });
});
