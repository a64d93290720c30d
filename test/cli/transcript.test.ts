import {readFile} from 'node:fs/promises';
import {expect, test} from 'vitest';
import {transcript, TRANSCRIPTS} from './transcript.js';

/**
 * What of a transcript must stay as the page shows it: each probe's verdict, title and fix,
 * the summary and the exit code. Keys, ids, ports and how the concurrent answers fell vary.
 */
function essence(text: string): string[] {
	return text.split('\n').flatMap(line => {
		const probe = /^(PASS|WARN|FAIL|SKIP) {2}(\d+ [^:]+):.*?(?:; fix: (.*) \[|$)/.exec(line);
		if (probe) return [`${probe[1]} ${probe[2]}${probe[3] ? ` → ${probe[3]}` : ''}`];
		return /^\d+ passed|^\d$/.test(line) ? [line] : [];
	});
}

test('the transcripts in docs/cli.md are what the command prints', async () => {
	const page = await readFile(new URL('../../docs/cli.md', import.meta.url), 'utf8');
	const shown = [...page.matchAll(/```text\n(\$ npx sendonce check[\s\S]*?)```/g)].map(match => match[1]!);
	expect(shown).toHaveLength(TRANSCRIPTS.length);
	for (const [index, {server, flags}] of TRANSCRIPTS.entries()) {
		const printed = await transcript(server(), flags);
		expect(essence(printed)).toEqual(essence(shown[index]!));
		expect(printed.split('\n')[0]!.replace(/localhost:\d+/, 'localhost:3000')).toBe(shown[index]!.split('\n')[0]);
	}
});
