/* docs/cli.md's table of the corpus, made from the corpus itself. */
import {probes} from '../../../src/cli/probes/index.js';
import type {CorpusEntry} from './entry.js';

const CELL = {pass: 'pass', warn: '**warn**', fail: '**FAIL**', skip: '–', none: '**none**'} as const;

/** The verdict each probe must give `entry`: a pass unless named; probe 7 a skip without `--origin`. */
export function expectedVerdicts(entry: CorpusEntry): Record<string, keyof typeof CELL> {
	return Object.fromEntries(probes.map(probe => [probe.id, entry.verdicts[probe.id as keyof CorpusEntry['verdicts']] ?? (probe.id === 'cors' && !entry.origin ? 'skip' : 'pass')]));
}

/** The exit code that goes with `entry`'s verdicts: 1 for a failure, else 3 for a probe without a verdict. */
export function expectedExit(entry: CorpusEntry): number {
	const verdicts = Object.values(expectedVerdicts(entry));
	return verdicts.includes('fail') ? 1 : verdicts.includes('none') ? 3 : 0;
}

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
