/*
 * The corpus (issue 21): each reference server gets the verdicts docs/cli.md's table gives it,
 * and the line that names its evidence; what the server counted agrees.
 */
import {readFile} from 'node:fs/promises';
import {describe, expect, test} from 'vitest';
import {PAGE_ORIGIN} from '../server/honest.js';
import {corpus} from './corpus/index.js';
import {corpusTable, expectedExit, expectedVerdicts} from './corpus/table.js';
import {runCheck, TWO_USERS} from './run.js';
import {probes} from '../../src/cli/probes/index.js';

describe.each(corpus)('$name', entry => {
	test.skipIf(entry.available === false)(`gets ${Object.entries(entry.verdicts).map(([id, verdict]) => `${verdict} ${probes.findIndex(probe => probe.id === id) + 1}`).join(', ') || 'a pass from every probe'}`, async () => {
		const started = await entry.start(PAGE_ORIGIN);
		try {
			const run = await runCheck(started.url, [...entry.flags ?? [], ...(entry.origin ? ['--origin', PAGE_ORIGIN] : []), ...TWO_USERS]);

			expect(run.verdicts, run.stdout).toEqual(expectedVerdicts(entry));
			expect(run.code, run.stdout).toBe(expectedExit(entry));
			expect(run.report.probes.map(probe => probe.verdict)).toEqual(Object.values(expectedVerdicts(entry)));
			if (entry.says) expect(run.stdout).toMatch(entry.says);
			if (entry.once) expect(Math.max(...started.executions.values()), run.stdout).toBe(1);
			if (entry.name.startsWith('sendonce/server')) {
				// The project's own modes: no failure, and no advice to change what a mode does by design.
				expect(Object.values(run.verdicts), run.stdout).not.toContain('fail');
				for (const line of run.stdout.split('\n').filter(each => each.startsWith('WARN'))) expect(line).toMatch(/needs no change/);
			}
		} finally {
			await started.close();
		}
	});
});

test('the corpus has at least 15 servers, and every probe a server it passes, one it fails and, where it warns, one it warns', () => {
	expect(corpus.length).toBeGreaterThanOrEqual(15);
	for (const probe of probes) {
		const verdicts = new Set(corpus.map(entry => expectedVerdicts(entry)[probe.id]));
		expect([...verdicts].filter(verdict => verdict !== 'skip' && verdict !== 'none').sort(), probe.id).toEqual(['fail', 'pass', 'warn']);
	}
});

test('docs/cli.md\'s table of the corpus is the corpus', async () => {
	const docs = await readFile(new URL('../../docs/cli.md', import.meta.url), 'utf8');
	const table = /<!-- corpus -->\n([\s\S]*?)\n<!-- \/corpus -->/.exec(docs)?.[1];

	expect(table).toBe(corpusTable(corpus));
});
