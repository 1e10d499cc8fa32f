import assert from "node:assert/strict";
import { test } from "node:test";
import { Arbiter } from "./arbiter.ts";

const ctx = {} as any;

test("a compaction goes to the first engine that owns it; none means pi's own", async () => {
	const a = new Arbiter();
	const asked: string[] = [];
	a.onCompaction("budget", (e) => {
		asked.push("budget");
		return e.customInstructions === "budget" ? { cancel: true } : undefined;
	});
	a.onCompaction("relay", (e) => {
		asked.push("relay");
		return e.customInstructions === "relay" ? { compaction: { summary: "note", firstKeptEntryId: "x", tokensBefore: 1 } } : undefined;
	});
	assert.deepEqual(await a.compact({ customInstructions: "relay" }, ctx), { compaction: { summary: "note", firstKeptEntryId: "x", tokensBefore: 1 } });
	assert.deepEqual(asked, ["relay"]); // budget is not asked once relay answered
	asked.length = 0;
	assert.deepEqual(await a.compact({ customInstructions: "budget" }, ctx), { cancel: true });
	assert.deepEqual(asked, ["relay", "budget"]);
	assert.equal(await a.compact({}, ctx), undefined);
});

test("an engine that throws does not own the compaction", async () => {
	const a = new Arbiter();
	a.onCompaction("relay", () => {
		throw new Error("boom");
	});
	a.onCompaction("budget", () => ({ cancel: true }));
	const err = console.error;
	console.error = () => {};
	try {
		assert.deepEqual(await a.compact({}, ctx), { cancel: true });
	} finally {
		console.error = err;
	}
});

test("observers see every input; the first holder that holds wins", async () => {
	const a = new Arbiter();
	const seen: string[] = [];
	a.observeInput("recap", (e) => void seen.push(`recap:${e.text}`));
	a.onInput("relay", () => ({ action: "handled" }));
	a.onInput("budget", (e) => (e.text === "b" ? { action: "transform", text: "B" } : { action: "continue" }));
	assert.deepEqual(await a.input({ text: "b" }, ctx), { action: "transform", text: "B" });
	assert.deepEqual(await a.input({ text: "r" }, ctx), { action: "handled" });
	assert.deepEqual(seen, ["recap:b", "recap:r"]);
});

test("one exclusive work at a time", () => {
	const a = new Arbiter();
	assert.equal(a.begin("relay"), true);
	assert.equal(a.begin("recap"), false);
	assert.equal(a.begin("relay"), false);
	a.end("recap"); // not the holder: no effect
	assert.equal(a.busy(), "relay");
	a.end("relay");
	assert.equal(a.begin("handoff"), true);
	a.reset();
	assert.equal(a.busy(), undefined);
});

test("engines outside the written order are refused", () => {
	const a = new Arbiter();
	assert.throws(() => a.onCompaction("recap", () => undefined), /COMPACTION_ORDER/);
	assert.throws(() => a.onInput("offload", () => undefined), /INPUT_ORDER/);
});
