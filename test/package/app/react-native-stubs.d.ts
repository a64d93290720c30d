// The React Native modules docs/react-native.md imports, as far as it uses them: the scratch
// app installs none of them (react-native alone is hundreds of packages).
declare module 'react-native-get-random-values';

declare module '@react-native-async-storage/async-storage' {
	const AsyncStorage: {
		getItem(key: string): Promise<string | null>;
		setItem(key: string, value: string): Promise<void>;
		removeItem(key: string): Promise<void>;
		getAllKeys(): Promise<readonly string[]>;
		multiGet(keys: readonly string[]): Promise<ReadonlyArray<[string, string | null]>>;
		multiRemove(keys: readonly string[]): Promise<void>;
	};
	export default AsyncStorage;
}

declare module '@react-native-community/netinfo' {
	const NetInfo: {addEventListener(listener: (state: {isConnected: boolean | null}) => void): () => void};
	export default NetInfo;
}

declare module 'react-native' {
	type AppStateStatus = 'active' | 'background' | 'inactive' | 'unknown' | 'extension';
	export const AppState: {
		currentState: AppStateStatus;
		addEventListener(type: 'change', listener: (state: AppStateStatus) => void): {remove(): void};
	};
}
