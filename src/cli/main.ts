import {writeFile} from 'node:fs/promises';
import {createInterface} from 'node:readline/promises';
import {HELP, parseCommandLine, type CheckOptions} from './args.js';
import {check, requestLimit} from './check.js';
import {exitCode, formatLine, formatSummary, jsonReport} from './report.js';

/** Where the command reads and writes: the process's streams, or a test's. */
export interface Io {
	stdout(text: string): void;
	stderr(text: string): void;
	/** Whether a person can answer the confirmation (stdin is a terminal). */
	interactive: boolean;
	/** Asks `question` and resolves with the answer. */
	ask(question: string): Promise<string>;
}

/** The process's terminal. */
export const processIo: Io = {
	stdout: text => process.stdout.write(text),
	stderr: text => process.stderr.write(text),
	interactive: process.stdin.isTTY === true,
	async ask(question) {
		const readline = createInterface({input: process.stdin, output: process.stderr});
		try {
			return await readline.question(question);
		} finally {
			readline.close();
		}
	},
};

async function confirmed(options: CheckOptions, io: Io): Promise<boolean> {
	if (options.yes) return true;
	if (!io.interactive) {
		io.stderr('sendonce check sends real requests with side effects; with no terminal to ask on, pass --yes to go ahead.\n');
		return false;
	}

	const answer = await io.ask(`This sends at most ${requestLimit(options.concurrency)} real ${options.method} requests to ${options.url}, each of which may take effect (a test endpoint or account?). Go ahead? [y/N] `);
	return /^y(?:es)?$/i.test(answer.trim());
}

/**
 * Runs `sendonce` with `argv` (the arguments after the program name) and resolves with the
 * exit code: 0 when no probe failed, 1 when one did, 2 for a bad command line or no go-ahead.
 */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
	const parsed = parseCommandLine(argv);
	if (parsed.type === 'help') {
		io.stdout(HELP);
		return 0;
	}

	if (parsed.type === 'error') {
		io.stderr(`${parsed.message}\n\n${HELP}`);
		return 2;
	}

	const {options} = parsed;
	if (!await confirmed(options, io)) return 2;
	io.stdout(`sendonce check ${options.method} ${options.url}\n`);
	let index = 0;
	const results = await check(options, {onResult: result => io.stdout(`${formatLine(result, index++)}\n`)});
	io.stdout(`${formatSummary(results)}\n`);
	if (options.jsonReport !== undefined) await writeFile(options.jsonReport, jsonReport(options.url, results));
	return exitCode(results);
}
