import type {SendOnceClient} from '../core/client-api.js';

export {asyncStorageStore, type AsyncStorageLike} from '../stores/async-storage.js';

/**
 * SHA-256 in plain JavaScript, for runtimes without Web Crypto's `subtle`: React Native's
 * Hermes, and pages served over insecure http: (not localhost). Pass it to `createClient`; the
 * core never carries it otherwise.
 *
 * @example
 * import AsyncStorage from '@react-native-async-storage/async-storage';
 * import {createClient} from 'sendonce';
 * import {asyncStorageStore, sha256} from 'sendonce/react-native';
 *
 * const client = createClient({store: asyncStorageStore(AsyncStorage), sha256});
 */
export {sha256Hex as sha256} from '../core/sha256.js';

/**
 * The part of React Native's `AppState` used here.
 *
 * @example
 * import {AppState} from 'react-native';
 * import type {AppStateLike} from 'sendonce/react-native';
 *
 * const appState: AppStateLike = AppState;
 */
export interface AppStateLike {
	addEventListener(type: 'change', listener: (state: string) => void): {remove(): void};
}

/**
 * Resumes interrupted intents whenever the app becomes active. iOS fails a fetch that was in
 * flight while the app was in the background, even when the server answered 200: the
 * textbook indeterminate case, which this sends again with the same key.
 *
 * @returns unsubscribe
 * @example
 * import {AppState} from 'react-native';
 * import AsyncStorage from '@react-native-async-storage/async-storage';
 * import {createClient} from 'sendonce';
 * import {asyncStorageStore, resumeOnAppStateChange} from 'sendonce/react-native';
 *
 * const client = createClient({store: asyncStorageStore(AsyncStorage)});
 * void client.resume();
 * const stop = resumeOnAppStateChange(client, AppState);
 */
export function resumeOnAppStateChange(client: Pick<SendOnceClient, 'resume'>, appState: AppStateLike): () => void {
	const subscription = appState.addEventListener('change', state => {
		if (state === 'active') {
			// resume() fails only when the store does; the next activation tries again.
			client.resume().catch(() => undefined);
		}
	});
	return () => {
		subscription.remove();
	};
}
