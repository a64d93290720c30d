/**
 * Tasks in line per key (a scope): each starts once every earlier task of any of its keys has
 * ended, so that concurrent calls see each other's writes. A task gets what the task before it
 * resolved to when it waited on one key alone (undefined when that one failed).
 */
export class Queue {
	readonly #tails = new Map<string, Promise<unknown>>();

	async run<T>(keys: string | readonly string[], task: (before: unknown) => Promise<T>): Promise<T> {
		const all = typeof keys === 'string' ? [keys] : keys;
		const previous = all.length === 1 ? this.#tails.get(all[0]!) : Promise.all(all.map(async key => this.#tails.get(key)));
		const run = Promise.resolve(previous).then(async before => task(all.length === 1 ? before : undefined));
		const settled = run.catch(() => undefined);
		for (const key of all) this.#tails.set(key, settled);
		void settled.then(() => {
			for (const key of all) if (this.#tails.get(key) === settled) this.#tails.delete(key);
		});
		return run;
	}
}
