/*
 * `npm run test:faults [-- --seconds=N]`: the fault test (test/faults/run.ts), every mode on
 * every store, for N seconds each (default 120), printing the table docs/benchmarks.md shows,
 * each check, and a closing `N passed, N failed` line; exit 1 when a check failed.
 */
import {postgresAnswers, redisAnswers} from '../server-half/services.js';
import {runFaults, table, verdicts, type FaultRunOptions, type FaultRunResult} from './run.js';

const argument = process.argv.find(item => item.startsWith('--seconds='));
const seconds = Number(argument?.slice('--seconds='.length) ?? 120);
if (!Number.isFinite(seconds) || seconds <= 0) throw new TypeError('Expected `--seconds` to be a positive number');
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
for (const [name, url, up] of [['Redis', redisUrl, await redisAnswers(redisUrl)], ['PostgreSQL', databaseUrl, await postgresAnswers(databaseUrl)]] as const) {
	if (!up) {
		console.log(`no ${name} at ${url}`);
		console.log('0 passed, 1 failed');
		process.exit(1);
	}
}

const results: FaultRunResult[] = [];
const plays: Array<Pick<FaultRunOptions, 'mode' | 'store' | 'redisClient' | 'play' | 'check'>> = [
	{mode: 'transactional', store: 'postgres'},
	{mode: 'lease', store: 'redis'},
	{mode: 'lease', store: 'redis', redisClient: 'ioredis'},
	{mode: 'lease', store: 'postgres'},
	{mode: 'lease', store: 'redis', redisClient: 'ioredis', play: 'cuts'},
	{mode: 'lease', store: 'redis', redisClient: 'node-redis', play: 'cuts'},
	{mode: 'lease', store: 'postgres', play: 'cuts'},
	{mode: 'lease', store: 'redis', check: true},
	{mode: 'lease', store: 'postgres', check: true},
	{mode: 'transactional', store: 'postgres', check: true},
];
for (const play of plays) {
	console.log(`${play.mode} mode on ${play.store}${play.redisClient ? ` (${play.redisClient})` : ''}${play.play === 'cuts' ? ', cuts only' : ''}${play.check ? ', checks instead of retries' : ''}, ${seconds} s…`);
	results.push(await runFaults({...play, seconds, redisUrl, databaseUrl, log: line => console.log(`  ${line}`)}));
}

console.log(`\n${table(results)}\n`);
const checks = results.flatMap(result => verdicts(result));
for (const check of checks) console.log(`${check.passed ? 'PASS' : 'FAIL'} ${check.name}`);
const failed = checks.filter(check => !check.passed).length;
console.log(`${checks.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
