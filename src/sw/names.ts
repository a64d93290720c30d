/** The Background Sync tag the pages register and the worker answers. */
export const SYNC_TAG = 'sendonce';

/** The `type` of what the worker posts to the pages when it settles an intent. */
export const MESSAGE_TYPE = 'sendonce:settled';

/** The `type` of a message that asks the worker to send the stored intents now. */
export const SEND_TYPE = 'sendonce:send';
