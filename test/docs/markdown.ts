/*
 * Just enough Markdown for checking the docs: fenced code blocks with the `declare` comments
 * before them, links, and the anchors GitHub gives headings. Not a Markdown parser: the docs
 * keep to fences, ATX headings (`## …`) and inline links, and these functions read exactly that.
 */

/** The languages whose blocks are compiled; a `vue` block contributes its `<script setup lang="ts">`. */
export type CheckedLanguage = 'ts' | 'tsx' | 'vue';

const LANGUAGES: Record<string, CheckedLanguage> = {ts: 'ts', typescript: 'ts', tsx: 'tsx', vue: 'vue'};

/** A code block to compile, and where it came from. */
export interface CodeBlock {
	/** The Markdown file, relative to the repository (`docs/api.md`). */
	file: string;
	/** The 1-based line, in `file`, of the first line of `code`. */
	line: number;
	lang: CheckedLanguage;
	/** What is compiled: the block's text, or a `vue` block's `<script setup lang="ts">`. */
	code: string;
	/** The block's free names, as TypeScript declarations, each with the line of its comment. */
	declarations: Array<{line: number; text: string}>;
}

/** One fenced block of any language. */
interface Fence {
	/** The info string's first word, lower-cased (`ts`, `sh`, `` for none). */
	info: string;
	/** The 1-based line of the first line inside the fence. */
	line: number;
	lines: string[];
	/** `declare:` comments directly before the fence (blank lines between are allowed). */
	declarations: Array<{line: number; text: string}>;
}

interface Scanned {
	fences: Fence[];
	/** `declare-page:` comments: declarations for every checked block of the file. */
	pageDeclarations: Array<{line: number; text: string}>;
	/** Every line, with the contents of fences and inline code blanked out (same lengths). */
	prose: string[];
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/;

/** Finds the fences, the `declare` comments and the prose around them. */
function scan(markdown: string): Scanned {
	const lines = markdown.split('\n');
	const fences: Fence[] = [];
	const pageDeclarations: Scanned['pageDeclarations'] = [];
	const prose: string[] = [];
	let pending: Fence['declarations'] = [];
	for (let index = 0; index < lines.length; index++) {
		const line = lines[index]!;
		const open = FENCE.exec(line);
		if (open) {
			const [, indent = '', marker = ''] = open;
			const inside: string[] = [];
			prose.push('');
			let end = index + 1;
			for (; end < lines.length; end++) {
				const candidate = lines[end]!;
				if (candidate.trim().startsWith(marker[0]!.repeat(marker.length)) && candidate.trim().replaceAll(marker[0]!, '') === '') break;
				// Lines inside a fence lose the fence's own indentation (a fence in a list item).
				inside.push(candidate.startsWith(indent) ? candidate.slice(indent.length) : candidate.trimStart());
			}

			fences.push({info: (open[3] ?? '').toLowerCase(), line: index + 2, lines: inside, declarations: pending});
			pending = [];
			for (let skipped = index + 1; skipped <= Math.min(end, lines.length - 1); skipped++) prose.push('');
			index = end;
			continue;
		}

		if (line.trimStart().startsWith('<!--')) {
			// A comment, perhaps over several lines.
			let end = index;
			while (end < lines.length - 1 && !lines[end]!.includes('-->')) end++;
			const comment = lines.slice(index, end + 1).join('\n');
			const directive = /^\s*<!--\s*(declare|declare-page):\s*([\s\S]*?)\s*-->\s*$/.exec(comment);
			if (directive) {
				// The line the declarations start on, which may be below the comment's first.
				const offset = directive[0].lastIndexOf(directive[2]!, directive[0].length - 3);
				const declaration = {line: index + 1 + comment.slice(0, offset).split('\n').length - 1, text: directive[2]!};
				(directive[1] === 'declare' ? pending : pageDeclarations).push(declaration);
			}

			for (let skipped = index; skipped <= end; skipped++) prose.push('');
			index = end;
			continue;
		}

		// Anything but a blank line between a `declare` comment and its fence detaches the comment.
		if (line.trim() !== '') pending = [];
		prose.push(line.replaceAll(/(`+)(?:(?!\1)[\s\S])*?\1/g, span => ' '.repeat(span.length)));
	}

	return {fences, pageDeclarations, prose};
}

/**
 * The `ts`, `tsx` and `vue` blocks of `markdown`, with their declarations: the file's
 * `<!-- declare-page: … -->` comments first, then the `<!-- declare: … -->` comments right
 * before the block.
 */
export function codeBlocks(markdown: string, file: string): CodeBlock[] {
	const {fences, pageDeclarations} = scan(markdown);
	const blocks: CodeBlock[] = [];
	for (const fence of fences) {
		const lang = LANGUAGES[fence.info];
		if (!lang) continue;
		const declarations = [...pageDeclarations, ...fence.declarations];
		if (lang !== 'vue') {
			blocks.push({file, line: fence.line, lang, code: fence.lines.join('\n'), declarations});
			continue;
		}

		// A single-file component: its `<script setup lang="ts">` is compiled, its template is not.
		const start = fence.lines.findIndex(line => /^<script\b[^>]*\blang=["']ts["'][^>]*>\s*$/.test(line.trim()));
		const end = fence.lines.findIndex((line, index) => index > start && line.trim() === '</script>');
		if (start === -1 || end === -1) {
			// Compiled as it is, so that the block fails with a message saying what is missing.
			blocks.push({file, line: fence.line, lang, code: 'throw new Error(\'A vue block needs a <script setup lang="ts"> … </script> to be checked\') as never;\n', declarations: []});
			continue;
		}

		blocks.push({file, line: fence.line + start + 1, lang, code: fence.lines.slice(start + 1, end).join('\n'), declarations});
	}

	return blocks;
}

/**
 * Every fenced block of `markdown` whose info string starts with `lang`, whole (a `vue` block's
 * template included), with the 1-based line of its first line: what a test runs as it is written.
 */
export function fencedBlocks(markdown: string, lang: string): Array<{line: number; text: string}> {
	return scan(markdown).fences.filter(fence => fence.info === lang).map(fence => ({line: fence.line, text: fence.lines.join('\n')}));
}

/** A link's target, as written, and its 1-based line. */
export interface Link {
	target: string;
	line: number;
}

/**
 * Every link and image target outside code: `[text](target)`, `![alt](target)` (the text may
 * span lines), `[name]: target` definitions, and HTML `href="…"` and `src="…"`.
 */
export function links(markdown: string): Link[] {
	const prose = scan(markdown).prose.join('\n');
	const found: Link[] = [];
	const lineAt = (offset: number) => prose.slice(0, offset).split('\n').length;
	const patterns = [
		/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)/g,
		/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm,
		/\b(?:href|src)="([^"]+)"/g,
	];
	for (const pattern of patterns) {
		for (const match of prose.matchAll(pattern)) {
			// The line of the target itself, which may come after a link text over several lines.
			found.push({target: match[1]!, line: lineAt(match.index + match[0].lastIndexOf(match[1]!))});
		}
	}

	return found.sort((a, b) => a.line - b.line);
}

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
	return heading
		.replaceAll(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
		// HTML tags are dropped, but not inside inline code, where they are text (`<Provider>`).
		.split(/(`+[^`]*`+)/)
		.map((part, index) => (index % 2 === 1 ? part : part.replaceAll(/<[^>]+>/g, '')))
		.join('')
		.trim()
		.toLowerCase()
		.replaceAll(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
		.replaceAll(' ', '-');
}

/** The anchors a Markdown file offers: its headings' slugs (repeats numbered) and HTML ids. */
export function anchors(markdown: string): Set<string> {
	const {prose} = scan(markdown);
	// Inline code was blanked out of the prose; headings need its text, so read them from the source.
	const lines = markdown.split('\n');
	const result = new Set<string>();
	const seen = new Map<string, number>();
	prose.forEach((line, index) => {
		const original = lines[index] ?? '';
		const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(original);
		if (heading && line.trim() !== '') {
			const base = slug(heading[1]!);
			const count = seen.get(base) ?? 0;
			seen.set(base, count + 1);
			result.add(count === 0 ? base : `${base}-${count}`);
		}

		for (const match of line.matchAll(/\b(?:id|name)="([^"]+)"/g)) result.add(match[1]!);
	});
	return result;
}
