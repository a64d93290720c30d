import {AnswerAbandonedError} from './answer-abandoned-error.js';

/**
 * `answer`, unless the client hangs up (`hangUp` aborts) and `answer` has not settled `wait` ms
 * later: then it rejects with an `AnswerAbandonedError`. A client that leaves changes nothing
 * while the route answers within the wait; every timer is gone once either settles.
 */
export async function untilAnswered<T>(answer: Promise<T>, hangUp: AbortSignal | undefined, wait: number): Promise<T> {
	if (!hangUp) return answer;
	let timer: ReturnType<typeof setTimeout> | undefined;
	let onAbort: (() => void) | undefined;
	const abandoned = new Promise<never>((_resolve, reject) => {
		const start = () => {
			timer = setTimeout(() => {
				reject(new AnswerAbandonedError(`The client hung up and the route gave no answer within ${wait} ms (hangUpWait): its claim was given up`));
			}, wait);
		};

		if (hangUp.aborted) start();
		else {
			onAbort = start;
			hangUp.addEventListener('abort', start, {once: true});
		}
	});
	try {
		return await Promise.race([answer, abandoned]);
	} finally {
		clearTimeout(timer);
		if (onAbort) hangUp.removeEventListener('abort', onAbort);
	}
}
