// docs/react-native.md.
import 'react-native-get-random-values'; // before sendonce: Hermes has no crypto.randomUUID
import AsyncStorage from '@react-native-async-storage/async-storage';
import NetInfo from '@react-native-community/netinfo';
import {AppState} from 'react-native';
import {createClient} from 'sendonce';
import {asyncStorageStore, resumeOnAppStateChange} from 'sendonce/react-native';

let online = true;
NetInfo.addEventListener(state => {
	online = state.isConnected !== false;
	if (online) void client.resume();
});

export const client = createClient({
	store: asyncStorageStore(AsyncStorage),
	isOnline: () => online,
});
void client.resume();
resumeOnAppStateChange(client, AppState); // returns an unsubscribe function
