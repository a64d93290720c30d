// Prints the transcripts of docs/cli.md, each served on http://localhost:3000/orders: `npx tsx scripts/cli-transcript.ts`
import {transcript, TRANSCRIPTS} from '../test/cli/transcript.js';

for (const {server, flags} of TRANSCRIPTS) process.stdout.write(`${await transcript(server(), flags, 3000)}\n`);
