import {existsSync, readFileSync} from 'node:fs';
import {dirname, join, normalize} from 'node:path';
import {anchors, links} from './markdown.js';

/** A relative link that leads nowhere. */
export interface BrokenLink {
	file: string;
	line: number;
	target: string;
	problem: string;
}

/** Links that leave the repository (`https:`, `mailto:`) are not followed. */
const EXTERNAL = /^(?:[a-z][\d+.a-z-]*:|\/\/)/i;

/**
 * Every relative link in `file` (relative to `root`) whose file does not exist, or whose
 * `#anchor` names no heading of that Markdown file. `read` gives a Markdown file's text, so a
 * test can feed files that are not on disk.
 */
export function checkLinks(file: string, {root, read = path => readFileSync(join(root, path), 'utf8')}: {root: string; read?: (path: string) => string}): BrokenLink[] {
	const broken: BrokenLink[] = [];
	for (const {target, line} of links(read(file))) {
		if (EXTERNAL.test(target)) continue;
		const hash = target.indexOf('#');
		const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
		const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
		// `/x` is the repository's root on GitHub; anything else is relative to the file.
		const resolved = path === '' ? file : normalize(path.startsWith('/') ? path.slice(1) : join(dirname(file), path));
		if (resolved.startsWith('..')) {
			broken.push({file, line, target, problem: 'leads out of the repository'});
			continue;
		}

		if (path !== '' && !existsSync(join(root, resolved))) {
			broken.push({file, line, target, problem: `${resolved} does not exist`});
			continue;
		}

		if (anchor === undefined || !resolved.endsWith('.md')) continue;
		const offered = anchors(path === '' ? read(file) : read(resolved));
		if (!offered.has(anchor)) broken.push({file, line, target, problem: `${resolved} has no heading with the anchor #${anchor}`});
	}

	return broken;
}
