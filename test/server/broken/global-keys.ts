// Breaks keys per user: one key space for everyone, so one user's key replays to another.
import {honestOptions, honestServer, type TestServer} from '../honest.js';

export function globalKeys(): TestServer {
	return honestServer({...honestOptions, scope: undefined});
}
