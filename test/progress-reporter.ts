import type {Reporter, TestModule, TestSpecification} from 'vitest/node';

/** How the progress reporter writes and tells time; the defaults are the process's own. */
export interface ProgressOptions {
	/**
	 * How long no file may end before the reporter names the files still running, in milliseconds.
	 * @default 20_000
	 */
	every?: number;
	/**
	 * Whether the output is a terminal. Vitest's default reporter shows the running files live
	 * there, so this reporter stays silent.
	 * @default process.stdout.isTTY
	 */
	terminal?: boolean;
	/** @default text => process.stdout.write(text) */
	write?: (text: string) => void;
	/** @default Date.now */
	now?: () => number;
}

/**
 * Says what a run is doing while the default reporter has nothing to print. In a log (not a
 * terminal) Vitest prints a file's line only when the file ends, and one file can take a minute
 * (the hermes test bundles an app with Metro, the package test packs and compiles one), so a
 * run looked stuck after `RUN`. This prints the run's size at its start and, whenever `every`
 * ms pass without a file ending, how many files are done and which are running, for how long.
 *
 * @example
 * // vitest.config.ts
 * export default defineConfig({test: {reporters: ['default', './test/progress-reporter.ts']}});
 */
export default class ProgressReporter implements Reporter {
	readonly #every: number;
	readonly #terminal: boolean;
	readonly #write: (text: string) => void;
	readonly #now: () => number;
	readonly #running = new Map<string, {label: string; since: number}>();
	#files = 0;
	#done = 0;
	#quietSince = 0;
	#timer: ReturnType<typeof setInterval> | undefined;

	constructor({every = 20_000, terminal = process.stdout.isTTY === true, write = text => process.stdout.write(text), now = Date.now}: ProgressOptions = {}) {
		this.#every = every;
		this.#terminal = terminal;
		this.#write = write;
		this.#now = now;
	}

	onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
		if (this.#terminal) return;
		const perProject = new Map<string, number>();
		for (const {project} of specifications) perProject.set(project.name, (perProject.get(project.name) ?? 0) + 1);
		const projects = [...perProject].map(([name, files]) => `${name} ${files}`).join(', ');
		this.#files = specifications.length;
		this.#done = 0;
		this.#write(`${specifications.length} test ${specifications.length === 1 ? 'file' : 'files'} (${projects}). Each file's line comes when it ends; while none does, the files still running are named every ${Math.round(this.#every / 1000)} s.\n`);
		this.#quietSince = this.#now();
		// Half the period, so that a quiet spell is reported at most half a period late.
		this.#timer = setInterval(() => {
			this.#report();
		}, this.#every / 2);
		// A run that ends without onTestRunEnd (a crash) must not be kept alive by this timer.
		this.#timer.unref?.();
	}

	onTestModuleStart(module: TestModule): void {
		this.#running.set(`${module.project.name}:${module.moduleId}`, {label: `|${module.project.name}| ${module.relativeModuleId}`, since: this.#now()});
	}

	onTestModuleEnd(module: TestModule): void {
		this.#running.delete(`${module.project.name}:${module.moduleId}`);
		this.#done++;
		this.#quietSince = this.#now();
	}

	onTestRunEnd(): void {
		clearInterval(this.#timer);
		this.#timer = undefined;
		this.#running.clear();
	}

	#report(): void {
		const now = this.#now();
		if (now - this.#quietSince < this.#every || this.#running.size === 0) return;
		const running = [...this.#running.values()].map(({label, since}) => `${label} (${Math.round((now - since) / 1000)} s)`);
		this.#write(`  ${this.#done} of ${this.#files} files done; still running: ${running.join(', ')}\n`);
		this.#quietSince = now;
	}
}
