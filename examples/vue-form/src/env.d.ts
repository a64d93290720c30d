// `tsc` checks the .ts files; the single-file components are compiled by @vitejs/plugin-vue.
declare module '*.vue' {
	import type {DefineComponent} from 'vue';

	const component: DefineComponent;
	export default component;
}
