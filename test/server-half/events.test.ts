// Issue 29: every step of a keyed request's life is an event an operator can count (onEvent),
// and the same events as OpenTelemetry metrics and spans, read back from in-memory exporters.
import {AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader} from '@opentelemetry/sdk-metrics';
import {BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor} from '@opentelemetry/sdk-trace-base';
import {describe, expect, test} from 'vitest';
import {idempotency, memoryKeyStore, openTelemetryEvents, type IdempotencyEvent, type KeyStore, type TransactionalKeyStore} from '../../src/server.js';

const request = (key: string, body = '{"item":1}', init: RequestInit = {}) =>
	new Request('http://localhost/orders', {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}, body, ...init});

function recorder() {
	const events: IdempotencyEvent[] = [];
	return {events, onEvent: (event: IdempotencyEvent) => events.push(event), types: () => events.map(event => event.type)};
}

describe('onEvent: a test per transition', () => {
	test('claimed, then stored with the status and the handler\'s time; then replayed', async () => {
		const {events, onEvent, types} = recorder();
		const once = idempotency({onEvent})(async () => Response.json({id: 1}, {status: 201}));
		await once(request('e-1'));
		await once(request('e-1'));
		expect(types()).toEqual(['claimed', 'stored', 'replayed']);
		expect(events[1]).toMatchObject({type: 'stored', key: 'e-1', status: 201});
		expect((events[1] as {ms: number}).ms).toBeGreaterThanOrEqual(0);
		expect(events[2]).toEqual({type: 'replayed', key: 'e-1', status: 201});
	});

	test('in-progress for a duplicate while the first runs (409), key-reused for another body (422)', async () => {
		const {onEvent, types} = recorder();
		let open!: () => void;
		const opened = new Promise<void>(resolve => {
			open = resolve;
		});
		const once = idempotency({onEvent})(async () => {
			await opened;
			return Response.json({id: 1}, {status: 201});
		});
		const first = once(request('e-2'));
		expect((await once(request('e-2'))).status).toBe(409);
		open();
		await first;
		expect((await once(request('e-2', '{"item":2}'))).status).toBe(422);
		expect(types()).toEqual(['claimed', 'in-progress', 'stored', 'key-reused']);
	});

	test('released, and why: a throw, a status that releases (a hang-up: hang-up.test.ts)', async () => {
		const {events, onEvent} = recorder();
		const thrower = idempotency({onEvent})(async () => {
			throw new Error('boom');
		});
		await expect(thrower(request('e-3'))).rejects.toThrow('boom');
		await idempotency({onEvent})(async () => new Response('busy', {status: 503}))(request('e-4'));
		expect(events.filter(event => event.type === 'released').map(event => [event.key, (event as {reason: string}).reason, (event as {status?: number}).status])).toEqual([
			['e-3', 'throw', undefined],
			['e-4', 'status', 503],
		]);
	});

	test('not-stored and lease-lost when another claim holds the key; not-stored when the store fails', async () => {
		const {events, onEvent} = recorder();
		const memory = memoryKeyStore();
		const lost: KeyStore = {...memory, claim: memory.claim.bind(memory), renew: memory.renew.bind(memory), release: memory.release.bind(memory), complete: async () => false};
		const failing: KeyStore = {...lost, complete: async () => {
			throw new Error('store down');
		}};
		const answer = async () => Response.json({id: 1}, {status: 201});
		expect((await idempotency({store: lost, onEvent, onError: () => undefined})(answer)(request('e-6'))).status).toBe(201);
		expect((await idempotency({store: failing, onEvent, onError: () => undefined})(answer)(request('e-7'))).status).toBe(201);
		expect(events.map(event => [event.type, event.key, (event as {reason?: string}).reason])).toEqual([
			['claimed', 'e-6', undefined],
			['lease-lost', 'e-6', undefined],
			['not-stored', 'e-6', 'lease-lost'],
			['claimed', 'e-7', undefined],
			['not-stored', 'e-7', 'store-failed'],
		]);
	});

	test('lease-lost, naming the earlier claim, when a claim takes over one whose lease ran out unanswered', async () => {
		const {events, onEvent} = recorder();
		const memory = memoryKeyStore();
		const store: KeyStore = {
			claim: async (id, claim) => ({...(await memory.claim(id, claim)), supersedes: 7}) as never,
			renew: memory.renew.bind(memory),
			complete: memory.complete.bind(memory),
			release: memory.release.bind(memory),
		};
		await idempotency({store, onEvent, onError: () => undefined})(async () => new Response('ok'))(request('e-8'));
		expect(events.slice(0, 2)).toMatchObject([{type: 'claimed', key: 'e-8'}, {type: 'lease-lost', key: 'e-8', fence: 7}]);
	});

	test('transactional mode: claimed, stored and the transaction\'s open time; a rollback is released; a duplicate\'s wait', async () => {
		const {events, onEvent, types} = recorder();
		let found: 'claimed' | 'running' = 'claimed';
		const store: TransactionalKeyStore<object> = {
			mode: 'transactional',
			async transaction(_claim, work) {
				return (await work({}, {state: found} as never)).value;
			},
			async complete() {},
		};
		const handler = idempotency({store, onEvent})(async (incoming: Request) => new Response('ok', {status: (await incoming.text()) === '"fail"' ? 500 : 201}));
		await handler(request('t-1'));
		await handler(request('t-2', '"fail"'));
		found = 'running';
		expect((await handler(request('t-3'))).status).toBe(409);
		expect(types()).toEqual(['claimed', 'stored', 'transaction', 'claimed', 'released', 'transaction', 'in-progress']);
		expect(events[2]).toMatchObject({type: 'transaction', key: 't-1', committed: true});
		expect(events[5]).toMatchObject({type: 'transaction', key: 't-2', committed: false});
		expect(events[6]).toMatchObject({type: 'in-progress', key: 't-3'});
		expect(typeof (events[6] as {waited?: number}).waited).toBe('number');
	});

	test('a hook that throws goes to onError (phase event) and changes nothing', async () => {
		const errors: unknown[][] = [];
		const once = idempotency({
			onEvent() {
				throw new Error('hook');
			},
			onError: (error, context) => errors.push([(error as Error).message, context]),
		})(async () => Response.json({id: 1}, {status: 201}));
		expect((await once(request('e-9'))).status).toBe(201);
		expect((await once(request('e-9'))).headers.get('idempotent-replayed')).toBe('true');
		expect(errors).toEqual([['hook', {key: 'e-9', phase: 'event'}], ['hook', {key: 'e-9', phase: 'event'}], ['hook', {key: 'e-9', phase: 'event'}]]);
	});

	test('refuses an onEvent that is not a function, and a hangUpWait that is not a whole number of ms', () => {
		expect(() => idempotency({onEvent: 'log' as never})).toThrow('Expected `onEvent` to be a function, got "log"');
		expect(() => idempotency({hangUpWait: -1})).toThrow('Expected `hangUpWait` to be a non-negative integer, got -1');
	});
});

describe('openTelemetryEvents: the names, read back from in-memory exporters', () => {
	test('counters, the claims held, the durations, and a span per handler and per transaction', async () => {
		const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
		const reader = new PeriodicExportingMetricReader({exporter: metricExporter, exportIntervalMillis: 60_000});
		const meterProvider = new MeterProvider({readers: [reader]});
		const spanExporter = new InMemorySpanExporter();
		const tracerProvider = new BasicTracerProvider({spanProcessors: [new SimpleSpanProcessor(spanExporter)]});
		const onEvent = openTelemetryEvents({meter: meterProvider.getMeter('sendonce'), tracer: tracerProvider.getTracer('sendonce')});
		let fail = false;
		const once = idempotency({onEvent})(async () => (fail ? new Response('busy', {status: 503}) : Response.json({id: 1}, {status: 201})));
		await once(request('o-1'));
		await once(request('o-1'));
		fail = true;
		await once(request('o-2'));
		await reader.forceFlush();

		const metrics = new Map(metricExporter.getMetrics().flatMap(resource => resource.scopeMetrics.flatMap(scope => scope.metrics)).map(metric => [metric.descriptor.name, metric]));
		expect([...metrics.keys()].sort()).toEqual(['sendonce.server.claims.active', 'sendonce.server.events', 'sendonce.server.handler.duration']);
		const counted = metrics.get('sendonce.server.events')!.dataPoints.map(point => [point.attributes['sendonce.event'], point.attributes['sendonce.reason'], point.attributes['http.response.status_code'], point.value]);
		expect(counted).toEqual(expect.arrayContaining([
			['claimed', undefined, undefined, 2],
			['stored', undefined, 201, 1],
			['replayed', undefined, 201, 1],
			['released', 'status', 503, 1],
		]));
		expect(metrics.get('sendonce.server.claims.active')!.dataPoints[0]!.value).toBe(0);
		expect(metrics.get('sendonce.server.handler.duration')!.descriptor.unit).toBe('s');

		const spans = spanExporter.getFinishedSpans().map(span => [span.name, span.attributes['sendonce.idempotency_key'], span.status.code]);
		expect(spans).toEqual([['sendonce handler', 'o-1', 0], ['sendonce handler', 'o-2', 2]]);
		await meterProvider.shutdown();
		await tracerProvider.shutdown();
	});

	test('refuses to be made without a meter or a tracer', () => {
		expect(() => openTelemetryEvents({})).toThrow('Expected `meter` or `tracer`');
	});
});
