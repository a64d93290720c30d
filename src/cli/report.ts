import type {ProbeResult, Undecided, Verdict} from './probe.js';

const LABEL: Record<Verdict, string> = {pass: 'PASS', warn: 'WARN', fail: 'FAIL', skip: 'SKIP', none: 'NONE'};

/** One probe's line: `FAIL  4 Same key, another body: sent …; got …; fix: …`. */
export function formatLine(result: ProbeResult, index: number): string {
	const fix = result.fix === undefined ? '' : `; ${result.verdict === 'none' ? 'to get one' : 'fix'}: ${result.fix}`;
	return `${LABEL[result.verdict]}  ${index + 1} ${result.title}: sent ${result.sent}; got ${result.got}${fix} [${result.rule}]`;
}

/** How many probes got each verdict. */
export function countVerdicts(results: readonly ProbeResult[]): Record<Verdict, number> {
	const counts: Record<Verdict, number> = {pass: 0, warn: 0, fail: 0, skip: 0, none: 0};
	for (const result of results) counts[result.verdict]++;
	return counts;
}

/** 1 when a probe failed, else 3 when one has no verdict (the run is incomplete), else 0. */
export const exitCode = (results: readonly ProbeResult[]): 0 | 1 | 3 => (results.some(result => result.verdict === 'fail') ? 1 : results.some(result => result.verdict === 'none') ? 3 : 0);

/** Why probes had no verdict, in the summary's words. */
const WHY: Record<Undecided, string> = {
	refused: 'the route refused the request the flags describe, so they have no evidence: run again with a --json body (and -H or --as headers) it accepts',
	limit: 'stopped at the request limit',
	'rate-limited': 'turned away by a rate limit',
};

/** The closing line: `6 passed, 1 warned, 1 failed, 0 skipped: …`, and how many have no verdict where some have none. */
export function formatSummary(results: readonly ProbeResult[]): string {
	const {pass, warn, fail, skip, none} = countVerdicts(results);
	const reasons = [...new Set(results.filter(result => result.verdict === 'none').map(result => WHY[result.undecided ?? 'refused']))];
	const verdict = fail > 0 ? 'the server breaks a rule a client relies on'
		: none > 0 ? `incomplete: ${none} ${none === 1 ? 'probe' : 'probes'} without a verdict (${reasons.join('; ')})`
			: warn > 0 ? 'no probe saw a rule broken, but read the warnings above' : 'no probe saw a rule broken (what answers cannot show: docs/cli.md, "What it cannot tell")';
	return `${pass} passed, ${warn} warned, ${fail} failed, ${skip} skipped${none > 0 ? `, ${none} without a verdict` : ''}: ${verdict}`;
}

/** The JSON report (`--json-report`): the same results, counts and exit code. */
export function jsonReport(url: string, results: readonly ProbeResult[]): string {
	const probes = results.map(({id, title, rule, verdict, sent, got, fix, undecided}) => ({id, title, rule, verdict, sent, got, ...(fix === undefined ? {} : {fix}), ...(undecided === undefined ? {} : {undecided})}));
	return `${JSON.stringify({url, probes, summary: countVerdicts(results), exitCode: exitCode(results)}, null, 2)}\n`;
}
