// @size-limit/preset-small-lib ships no types: it is a list of size-limit plugins.
declare module '@size-limit/preset-small-lib' {
	const plugins: unknown[];
	export default plugins;
}
