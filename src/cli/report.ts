import type {ProbeResult, Verdict} from './probe.js';

const LABEL: Record<Verdict, string> = {pass: 'PASS', warn: 'WARN', fail: 'FAIL', skip: 'SKIP'};

/** One probe's line: `FAIL  4 Same key, another body: sent …; got …; fix: …`. */
export function formatLine(result: ProbeResult, index: number): string {
	const fix = result.fix === undefined ? '' : `; fix: ${result.fix}`;
	return `${LABEL[result.verdict]}  ${index + 1} ${result.title}: sent ${result.sent}; got ${result.got}${fix} [${result.rule}]`;
}

/** How many probes got each verdict. */
export function countVerdicts(results: readonly ProbeResult[]): Record<Verdict, number> {
	const counts: Record<Verdict, number> = {pass: 0, warn: 0, fail: 0, skip: 0};
	for (const result of results) counts[result.verdict]++;
	return counts;
}

/** 1 when a probe failed, else 3 when one was stopped by the request limit, else 0. */
export const exitCode = (results: readonly ProbeResult[]): 0 | 1 | 3 => (results.some(result => result.verdict === 'fail') ? 1 : results.some(result => result.stopped) ? 3 : 0);

/** The closing line: `6 passed, 1 warned, 1 failed, 0 skipped`. */
export function formatSummary(results: readonly ProbeResult[]): string {
	const {pass, warn, fail, skip} = countVerdicts(results);
	const stopped = results.filter(result => result.stopped).length;
	const verdict = fail > 0 ? 'the server breaks a rule a client relies on'
		: stopped > 0 ? `incomplete: ${stopped} ${stopped === 1 ? 'probe' : 'probes'} stopped at the request limit, with no verdict`
			: warn > 0 ? 'no probe saw a rule broken, but read the warnings above' : 'no probe saw a rule broken (what answers cannot show: docs/cli.md, "What it cannot tell")';
	return `${pass} passed, ${warn} warned, ${fail} failed, ${skip} skipped: ${verdict}`;
}

/** The JSON report (`--json-report`): the same results, counts and exit code. */
export function jsonReport(url: string, results: readonly ProbeResult[]): string {
	const probes = results.map(({id, title, rule, verdict, sent, got, fix}) => ({id, title, rule, verdict, sent, got, ...(fix === undefined ? {} : {fix})}));
	return `${JSON.stringify({url, probes, summary: countVerdicts(results), exitCode: exitCode(results)}, null, 2)}\n`;
}
