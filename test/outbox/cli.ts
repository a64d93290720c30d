/*
 * `npm run test:outbox [-- --seconds=N]`: the outbox chaos run (test/outbox/run.ts) for N seconds
 * (default 120), printing the row docs/benchmarks.md shows, each check, and a closing
 * `N passed, N failed` line; exit 1 when a check failed.
 */
import {postgresAnswers} from '../server-half/services.js';
import {HEADER, row, runOutbox, verdicts} from './run.js';

const argument = process.argv.find(item => item.startsWith('--seconds='));
const seconds = Number(argument?.slice('--seconds='.length) ?? 120);
if (!Number.isFinite(seconds) || seconds <= 0) throw new TypeError('Expected `--seconds` to be a positive number');
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
if (!await postgresAnswers(databaseUrl)) {
	console.log(`no PostgreSQL at ${databaseUrl}`);
	console.log('0 passed, 1 failed');
	process.exit(1);
}

console.log(`the outbox chain under chaos, ${seconds} s…`);
const result = await runOutbox({seconds, databaseUrl, log: line => console.log(`  ${line}`)});
console.log(`\n${HEADER}\n${row(result)}\n`);
const checks = verdicts(result);
for (const {name, passed} of checks) console.log(`${passed ? 'ok  ' : 'FAIL'} ${name}`);
const failed = checks.filter(({passed}) => !passed).length;
console.log(`${checks.length - failed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
