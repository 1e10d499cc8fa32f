// Print what pi's own code makes of a session file, for every possible leaf.
//
// usage: node oracle.mjs <pi-coding-agent package dir> <session.jsonl> > <name>.pi.json
//
// The file is loaded the way pi loads it (SessionManager.open on a private
// copy, so migrations and repairs never touch the fixture). For each entry,
// taken as the leaf, it records pi's branch, context entries, projected
// messages (AgentMessage and convertToLlm forms) and token estimates.
// Entries are referred to by their index in file order (header excluded),
// because a version 1 file gets random ids when pi migrates it.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, file] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(join(pkg, "dist", p)).href);
const { SessionManager, buildSessionProjection } = await load("core/session-manager.js");
const { estimateTokens, estimateProjectedContextTokens } = await load("core/compaction/compaction.js");
const { convertToLlm } = await load("core/messages.js");

const dir = mkdtempSync(join(tmpdir(), "oracle-"));
try {
	const copy = join(dir, basename(file));
	copyFileSync(file, copy);
	const sm = SessionManager.open(copy, dir);
	const entries = sm.getEntries();
	const byId = new Map(entries.map((e) => [e.id, e]));
	const index = new Map(entries.map((e, i) => [e, i]));

	const table = (list) => {
		const seen = new Map();
		return {
			list,
			add(value) {
				const key = JSON.stringify(value);
				if (!seen.has(key)) {
					seen.set(key, list.length);
					list.push(value);
				}
				return seen.get(key);
			},
		};
	};
	const messages = table([]);
	const llm = table([]);

	const leaves = entries.map((leaf) => {
		const branch = sm.getBranch(leaf.id);
		const projection = buildSessionProjection(entries, leaf.id, byId);
		const estimate = estimateProjectedContextTokens(projection, branch);
		return {
			leaf: index.get(leaf),
			branch: branch.map((e) => index.get(e)),
			context: projection.entries.map((p) => ({
				entry: index.get(p.sourceEntry),
				messages: p.messages.map((m) => messages.add(m)),
			})),
			llm: convertToLlm(projection.messages).map((m) => llm.add(m)),
			tokens: projection.messages.reduce((sum, m) => sum + estimateTokens(m), 0),
			contextTokens: estimate.tokens,
			usageTokens: estimate.usageTokens,
			trailingTokens: estimate.trailingTokens,
			lastUsageIndex: estimate.lastUsageIndex,
			model: projection.model,
			thinkingLevel: projection.thinkingLevel,
		};
	});

	const out = {
		header: sm.getHeader(),
		ids: entries.map((e) => e.id),
		types: entries.map((e) => e.type),
		leaf: entries.findIndex((e) => e === sm.getLeafEntry()),
		leaves,
		messages: messages.list,
		llm: llm.list,
	};
	// One leaf or message per line keeps diffs of regenerated fixtures readable.
	const lines = Object.entries(out).map(([key, value]) =>
		Array.isArray(value) && typeof value[0] === "object"
			? `${JSON.stringify(key)}: [\n${value.map((v) => JSON.stringify(v)).join(",\n")}\n]`
			: `${JSON.stringify(key)}: ${JSON.stringify(value)}`,
	);
	process.stdout.write(`{\n${lines.join(",\n")}\n}\n`);
} finally {
	rmSync(dir, { recursive: true, force: true });
}
