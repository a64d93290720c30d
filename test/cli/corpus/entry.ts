/* What one server of the corpus is, and how `sendonce check` is run against it. */
import type {Verdict} from '../../../src/cli/probe.js';
import type {TestServer} from '../../server/honest.js';
import {serve} from '../../server/orders.js';

/** A corpus server, started: its endpoint, what it counted, how to stop it. */
export interface Started {
	url: string;
	/** Executions per `'<authorization> <key>'`. */
	executions: Map<string, number>;
	close(): Promise<void>;
}

/** One reference server and the verdicts `sendonce check` must give it. */
export interface CorpusEntry {
	/** Its name in docs/cli.md's table. */
	name: string;
	/** What it does right or breaks, in a few words. */
	what: string;
	/** Flags besides the URL, `--json`, `--origin` and the two `--as`: `-X PUT`, `-H 'Cookie: …'`. */
	flags?: string[];
	/** Whether the run gives `--origin` (probe 7 runs). */
	origin?: boolean;
	/** The verdicts that are not a pass; probe 7 is a skip without `origin`. */
	verdicts: Partial<Record<ProbeId, Verdict>>;
	/** A line the run must print (the evidence that decided, in the probe's words). */
	says?: RegExp;
	/** Whether every key must have run at most once, as the server counted. */
	once?: boolean;
	/** False when the service it needs is absent (its test skips, or fails with CI=true). */
	available?: boolean;
	start(origin: string): Promise<Started>;
}

export type ProbeId = 'no-key' | 'replay' | 'lost-reply' | 'mismatch' | 'concurrency' | 'key-format' | 'cors' | 'per-user' | 'key-check';

/** Starts a Fetch-handler server of test/server on a free local port. */
export function served(make: (origin: string) => TestServer): (origin: string) => Promise<Started> {
	return async origin => {
		const server = make(origin);
		return {...await serve(async request => server.handle(request)), executions: server.executions};
	};
}
