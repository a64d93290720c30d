/* docs/cli.md's table of the corpus, made from the corpus itself. */
import {probes} from '../../../src/cli/probes/index.js';
import type {CorpusEntry} from './entry.js';

const CELL = {pass: 'pass', warn: '**warn**', fail: '**FAIL**', skip: '–'} as const;

/** The verdict each probe must give `entry`: a pass unless named; probe 7 a skip without `--origin`. */
export function expectedVerdicts(entry: CorpusEntry): Record<string, keyof typeof CELL> {
	return Object.fromEntries(probes.map(probe => [probe.id, entry.verdicts[probe.id as keyof CorpusEntry['verdicts']] ?? (probe.id === 'cors' && !entry.origin ? 'skip' : 'pass')]));
}

/** The exit code that goes with `entry`'s verdicts. */
export const expectedExit = (entry: CorpusEntry): number => (Object.values(expectedVerdicts(entry)).includes('fail') ? 1 : 0);

/** The markdown table: one row per server, one column per probe, and the exit code. */
export function corpusTable(corpus: readonly CorpusEntry[]): string {
	const head = `| server | what it does | ${probes.map((_, index) => index + 1).join(' | ')} | exit |`;
	const rule = `| --- | --- | ${probes.map(() => ':-:').join(' | ')} | :-: |`;
	const rows = corpus.map(entry => {
		const flags = entry.flags?.length ? ` (\`${entry.flags.map(flag => (flag.includes(' ') ? `'${flag}'` : flag)).join(' ')}\`)` : '';
		return `| ${entry.name} | ${entry.what}${flags} | ${Object.values(expectedVerdicts(entry)).map(verdict => CELL[verdict]).join(' | ')} | ${expectedExit(entry)} |`;
	});
	return [head, rule, ...rows].join('\n');
}
