import type {Probe} from '../probe.js';
import {concurrency} from './concurrency.js';
import {cors} from './cors.js';
import {keyCheck} from './key-check.js';
import {keyFormat} from './key-format.js';
import {lostReply} from './lost-reply.js';
import {mismatch} from './mismatch.js';
import {noKey} from './no-key.js';
import {perUser} from './per-user.js';
import {replay} from './replay.js';

/** Every probe, in the order they run and are numbered. */
export const probes: readonly Probe[] = [noKey, replay, lostReply, mismatch, concurrency, keyFormat, cors, perUser, keyCheck];
