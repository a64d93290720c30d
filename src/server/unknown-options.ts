/** Throws a TypeError naming the first key of `given` that is not in `known`: a typo must not pass silently. */
export function refuseUnknown(given: object, known: ReadonlySet<string>, prefix = ''): void {
	for (const name of Object.keys(given)) {
		if (!known.has(name)) throw new TypeError(`Unknown option \`${prefix}${name}\`; expected one of ${[...known].join(', ')}`);
	}
}

/** `options` itself checked: undefined is `{}`, anything but a plain object is refused. */
export function optionsObject<T extends object>(options: T | undefined, name = 'options'): T {
	if (options === undefined) return {} as T;
	if (typeof options !== 'object' || options === null || Array.isArray(options)) {
		throw new TypeError(`Expected \`${name}\` to be an object, got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`);
	}

	return options;
}
