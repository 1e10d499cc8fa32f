// Derive fixtures from recorded ones (run by record.sh after recording).
//
// usage: node derive.mjs <testdata dir>
//
//   v1.jsonl       compaction.jsonl written back as a version 1 file: no
//                  version, no id/parentId, firstKeptEntryIndex instead of
//                  firstKeptEntryId (the inverse of pi's migrateV1ToV2).
//   v2.jsonl       branch.jsonl written back as a version 2 file: custom
//                  messages as message entries with role "hookMessage" (the
//                  inverse of pi's migrateV2ToV3).
//   damaged.jsonl  tools.jsonl with lines pi skips (blank, truncated, not JSON),
//                  a duplicate id, a dangling parent, an unknown entry type, a
//                  CRLF line ending and no final newline.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
const read = (name) =>
	readFileSync(join(dir, name), "utf8")
		.split("\n")
		.filter((line) => line.trim())
		.map((line) => JSON.parse(line));
const write = (name, lines) => writeFileSync(join(dir, name), lines.map((l) => `${l}\n`).join(""));

// v1: a linear session (compaction.jsonl never branches).
{
	const entries = read("compaction.jsonl");
	const position = new Map(entries.map((e, i) => [e.id, i]));
	const lines = entries.map((e) => {
		if (e.type === "session") {
			const { version, ...header } = e;
			return JSON.stringify(header);
		}
		const { id, parentId, ...rest } = e;
		if (e.type === "compaction") {
			const { firstKeptEntryId, ...compaction } = rest;
			return JSON.stringify({ ...compaction, firstKeptEntryIndex: position.get(firstKeptEntryId) });
		}
		return JSON.stringify(rest);
	});
	write("v1.jsonl", lines);
}

// v2: the tree stays, custom messages become hookMessage messages.
{
	const lines = read("branch.jsonl").map((e) => {
		if (e.type === "session") return JSON.stringify({ ...e, version: 2 });
		if (e.type === "custom_message") {
			const { type, id, parentId, timestamp, customType, content, display, details } = e;
			return JSON.stringify({
				type: "message",
				id,
				parentId,
				timestamp,
				message: { role: "hookMessage", customType, content, display, details, timestamp: new Date(timestamp).getTime() },
			});
		}
		return JSON.stringify(e);
	});
	write("v2.jsonl", lines);
}

// damaged: pi drops the bad lines and resolves the tree through its id map.
{
	const entries = read("tools.jsonl");
	const lines = entries.map((e) => JSON.stringify(e));
	const at = (i) => entries[i];
	// A custom entry reusing the id of entry 6 (the first toolResult) with that
	// entry's parent: the id map then skips the original on every later branch.
	const dup = { type: "custom", id: at(6).id, parentId: at(6).parentId, timestamp: at(6).timestamp, customType: "dup", data: {} };
	const dangling = { type: "custom", id: "dangle01", parentId: "nowhere0", timestamp: at(8).timestamp, customType: "orphan", data: null };
	const last = at(entries.length - 1);
	const unknown = {
		type: "future_entry",
		id: "future01",
		parentId: last.id,
		timestamp: last.timestamp,
		payload: { nested: [1, 2.5, "é\u2028", { deep: null }], flag: true },
	};
	const out = [
		...lines.slice(0, 4),
		"",
		'{"type":"message","id":"trunc001","parentId":',
		...lines.slice(4, 8),
		JSON.stringify(dup),
		"not json at all",
		`${lines[8]}\r`,
		JSON.stringify(dangling),
		"   ",
		...lines.slice(9),
	];
	writeFileSync(join(dir, "damaged.jsonl"), `${out.join("\n")}\n${JSON.stringify(unknown)}`);
}
