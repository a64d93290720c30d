import type {IdempotencyEvent} from './events.js';

/** What `openTelemetryEvents` needs of an OpenTelemetry `Meter` (`metrics.getMeter(…)` of `@opentelemetry/api` 1.3 or later). */
interface MeterLike {
	createCounter(name: string, options?: {description?: string; unit?: string}): {add(value: number, attributes?: Record<string, string | number | boolean>): void};
	createUpDownCounter(name: string, options?: {description?: string; unit?: string}): {add(value: number, attributes?: Record<string, string | number | boolean>): void};
	createHistogram(name: string, options?: {description?: string; unit?: string}): {record(value: number, attributes?: Record<string, string | number | boolean>): void};
}

/** What `openTelemetryEvents` needs of an OpenTelemetry `Tracer` (`trace.getTracer(…)`). */
interface TracerLike {
	startSpan(name: string, options?: {startTime?: number; attributes?: Record<string, string | number | boolean>}): {
		setStatus(status: {code: number; message?: string}): unknown;
		end(endTime?: number): void;
	};
}

/** `SpanStatusCode.ERROR` of `@opentelemetry/api`. */
const ERROR = 2;

/**
 * Turns `onEvent`'s events into OpenTelemetry metrics and spans, on the `meter` and `tracer` you
 * give it (from `@opentelemetry/api`, which sendonce does not import: your app's copy, and its
 * SDK, are the ones used). Metrics: `sendonce.server.events` (counter, by `sendonce.event`, and
 * `sendonce.reason` and `http.response.status_code` where the event has them),
 * `sendonce.server.claims.active` (up-down counter: claims held now, the number that climbs when
 * keys are held and never end), `sendonce.server.handler.duration` and
 * `sendonce.server.transaction.duration` (histograms, seconds), `sendonce.server.duplicate.wait`
 * (histogram, seconds a transactional duplicate waited before its 409). Spans, children of the
 * active one: `sendonce handler` from the claim to its end (status ERROR when the answer was not
 * kept), and `sendonce transaction` for a keyed transaction's open time, each with
 * `sendonce.idempotency_key`.
 *
 * @example
 * import {metrics, trace} from '@opentelemetry/api';
 * import {idempotency, openTelemetryEvents} from 'sendonce/server';
 *
 * const once = idempotency({onEvent: openTelemetryEvents({meter: metrics.getMeter('sendonce'), tracer: trace.getTracer('sendonce')})});
 */
export function openTelemetryEvents({meter, tracer}: {meter?: MeterLike; tracer?: TracerLike}): (event: IdempotencyEvent) => void {
	if (meter === undefined && tracer === undefined) throw new TypeError('Expected `meter` or `tracer`, from `@opentelemetry/api`\'s `metrics.getMeter()` and `trace.getTracer()`');
	const events = meter?.createCounter('sendonce.server.events', {description: 'Steps of keyed requests: claimed, replayed, in-progress (409), key-reused (422), stored, released, not-stored, lease-lost, transaction, checked, closed (410)', unit: '{event}'});
	const active = meter?.createUpDownCounter('sendonce.server.claims.active', {description: 'Keys claimed whose handler has not ended yet', unit: '{claim}'});
	const handler = meter?.createHistogram('sendonce.server.handler.duration', {description: 'From a key\'s claim to its answer stored, or its claim given up', unit: 's'});
	const transaction = meter?.createHistogram('sendonce.server.transaction.duration', {description: 'How long a keyed transaction was open', unit: 's'});
	const waited = meter?.createHistogram('sendonce.server.duplicate.wait', {description: 'How long a transactional duplicate waited for the running request before its 409', unit: 's'});

	const span = (name: string, ms: number, key: string, attributes: Record<string, string | number | boolean>, failed: string | undefined) => {
		if (!tracer) return;
		const now = Date.now();
		const started = tracer.startSpan(name, {startTime: now - ms, attributes: {'sendonce.idempotency_key': key, ...attributes}});
		if (failed) started.setStatus({code: ERROR, message: failed});
		started.end(now);
	};

	return event => {
		const attributes: Record<string, string | number> = {'sendonce.event': event.type};
		if ('reason' in event) attributes['sendonce.reason'] = event.reason;
		if (event.type === 'checked') attributes['sendonce.check'] = event.state;
		if ('status' in event && event.status !== undefined) attributes['http.response.status_code'] = event.status;
		events?.add(1, attributes);
		switch (event.type) {
			case 'claimed': {
				active?.add(1);
				break;
			}

			case 'stored':
			case 'released':
			case 'not-stored': {
				active?.add(-1);
				handler?.record(event.ms / 1000, attributes);
				span('sendonce handler', event.ms, event.key, attributes, event.type === 'stored' ? undefined : `${event.type}: ${(event as {reason: string}).reason}`);
				break;
			}

			case 'transaction': {
				transaction?.record(event.ms / 1000, {'sendonce.transaction.committed': event.committed});
				span('sendonce transaction', event.ms, event.key, {'sendonce.transaction.committed': event.committed}, undefined);
				break;
			}

			case 'in-progress': {
				if (event.waited !== undefined) waited?.record(event.waited / 1000);
				break;
			}

			default:
		}
	};
}
