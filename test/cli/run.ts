/* Runs `sendonce check` in this process against a server under test, and reads what it said. */
import {mkdtemp, readFile, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {main, type Io} from '../../src/cli/main.js';
import type {Verdict} from '../../src/cli/probe.js';
import {probes} from '../../src/cli/probes/index.js';

/** What one run printed and returned. */
export interface CheckRun {
	code: number;
	stdout: string;
	stderr: string;
	/** Each probe's verdict, by probe id, as the printed lines say. */
	verdicts: Record<string, Verdict>;
	/** The `--json-report` file's content. */
	report: {probes: Array<{id: string; verdict: Verdict}>; summary: Record<Verdict, number>; exitCode: number};
}

/** An `Io` that records what is written and answers the confirmation with `answer` when `interactive`. */
export function recordingIo({interactive = false, answer = ''} = {}): Io & {out: string[]; err: string[]; asked: string[]} {
	const out: string[] = [];
	const err: string[] = [];
	const asked: string[] = [];
	return {
		out,
		err,
		asked,
		interactive,
		stdout: text => out.push(text),
		stderr: text => err.push(text),
		async ask(question) {
			asked.push(question);
			return answer;
		},
	};
}

/** The probe lines' verdicts: `FAIL  5 Concurrent duplicates: …` → `{concurrency: 'fail'}`. */
export function verdictsOf(stdout: string): Record<string, Verdict> {
	const verdicts: Record<string, Verdict> = {};
	for (const match of stdout.matchAll(/^(PASS|WARN|FAIL|SKIP|NONE) {2}(\d+) /gm)) verdicts[probes[Number(match[2]) - 1]!.id] = match[1]!.toLowerCase() as Verdict;
	return verdicts;
}

/** `sendonce check url --yes --json '{"sku":"A1"}' …args --json-report <temporary>`. */
export async function runCheck(url: string, args: string[] = []): Promise<CheckRun> {
	const folder = await mkdtemp(join(tmpdir(), 'sendonce-check-'));
	try {
		const io = recordingIo();
		const reportFile = join(folder, 'report.json');
		const code = await main(['check', url, '--yes', '--json', '{"sku":"A1"}', ...args, '--json-report', reportFile], io);
		const stdout = io.out.join('');
		return {code, stdout, stderr: io.err.join(''), verdicts: verdictsOf(stdout), report: JSON.parse(await readFile(reportFile, 'utf8')) as CheckRun['report']};
	} finally {
		await rm(folder, {recursive: true, force: true});
	}
}

/** Every probe passes; a probe not named in `verdicts` is expected to pass. */
export const expected = (verdicts: Record<string, Verdict>): Record<string, Verdict> => Object.fromEntries(probes.map(probe => [probe.id, verdicts[probe.id] ?? 'pass']));

/** The flags that make every probe run: a page's origin and two users. */
export const ALL_PROBES = ['--origin', 'https://app.test', '--as', 'Authorization: Bearer alice', '--as', 'Authorization: Bearer bob'];
/** Two users, no origin: for servers that answer no CORS at all. */
export const TWO_USERS = ALL_PROBES.slice(2);
