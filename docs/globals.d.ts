// The names the code blocks in README.md, CONTRIBUTING.md and docs/ take from the app around
// them. Only the check that compiles those blocks reads this file (test/unit/docs.test.ts); it
// is not part of the package. A name one page alone needs goes in a `declare` comment there.

/** The signed-in user's access token. */
declare function getToken(): string;
/** Puts a line of text in front of the user. */
declare function show(message: string): void;
/** The contact form's values. */
declare const form: {name: string; email: string; message: string};
/** The app's sendonce client, made with `createClient()` elsewhere. */
declare const client: import('sendonce').SendOnceClient;
/** A component, for React's `<App />` and Vue's `createApp(App)` alike. */
declare const App: () => null;
/** A React root, as `createRoot(element)` returns it. */
declare const root: {render(children: unknown): void};

// React Native modules the docs import and this repository does not install (react-native alone
// is hundreds of packages), as far as the docs use them. AsyncStorage is installed for its tests.
declare module 'react-native-get-random-values';

declare module '@react-native-community/netinfo' {
	const NetInfo: {addEventListener(listener: (state: {isConnected: boolean | null}) => void): () => void};
	export default NetInfo;
}

declare module 'react-native' {
	import type {ReactNode} from 'react';

	type AppStateStatus = 'active' | 'background' | 'inactive' | 'unknown' | 'extension';
	export const AppState: {
		currentState: AppStateStatus;
		addEventListener(type: 'change', listener: (state: AppStateStatus) => void): {remove(): void};
	};
	// The components the contact form uses, with the props it passes (React Native's own names and types).
	export function View(props: {children?: ReactNode; accessibilityRole?: 'alert' | 'none'}): ReactNode;
	export function Text(props: {children?: ReactNode}): ReactNode;
	export function TextInput(props: {
		value?: string;
		onChangeText?: (text: string) => void;
		editable?: boolean;
		placeholder?: string;
		multiline?: boolean;
		keyboardType?: 'default' | 'email-address';
		accessibilityLabel?: string;
	}): ReactNode;
	export function Button(props: {title: string; onPress?: () => void; disabled?: boolean}): ReactNode;
}
