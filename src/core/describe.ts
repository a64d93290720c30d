/** A value's kind, for error messages: `null`, `string`, `FormData`, `object`. */
export function describe(value: unknown): string {
	if (value === null) return 'null';
	if (typeof value !== 'object') return typeof value;
	return (value as object).constructor?.name ?? 'object';
}
