// The outbox chaos run, short: OUTBOX_SECONDS (default 15) of presses against the example's web
// process, worker and mail server under kills and faults. `npm run test:outbox -- --seconds=120`
// runs it longer.
import {describe, expect, inject, test} from 'vitest';
import {HEADER, row, runOutbox, verdicts} from './run.js';

const seconds = Number(process.env.OUTBOX_SECONDS ?? 15);

describe.skipIf(inject('databaseUrl') === null)('the contact form on the outbox example, under kills of the web process and the worker, lost replies, 503s and a mail server that drops connections', () => {
	test('every press ends with exactly one job and at least one message received, and a message received twice carries one Message-ID', async () => {
		const result = await runOutbox({seconds, databaseUrl: inject('databaseUrl')!});
		console.log(`${HEADER}\n${row(result)}`);
		for (const verdict of verdicts(result)) expect.soft(verdict.passed, verdict.name).toBe(true);
	}, (seconds + 90) * 1000);
});
