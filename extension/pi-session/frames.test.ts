import assert from "node:assert/strict";
import { test } from "node:test";
import { Decoder, encode } from "./frames.ts";

test("frames survive any chunking", () => {
	const bulk = Buffer.from("raw\nbytes\x00{\"x\":1}\n");
	const stream = Buffer.concat([
		...encode({ id: 1, method: "a.b", params: { s: "é" } }, bulk),
		Buffer.from("\n  \n"),
		...encode({ id: 2, result: { ok: true } }),
		...encode({ method: "bye" }),
	]);
	for (const size of [1, 2, 3, 7, 64, stream.length]) {
		const d = new Decoder();
		const frames = [];
		for (let i = 0; i < stream.length; i += size) frames.push(...d.push(stream.subarray(i, i + size)));
		assert.equal(frames.length, 3, `chunk size ${size}`);
		assert.deepEqual(frames[0].msg, { jsonrpc: "2.0", id: 1, method: "a.b", params: { s: "é" }, bulk: bulk.length });
		assert.ok(frames[0].bulk!.equals(bulk));
		assert.deepEqual(frames[1].msg, { jsonrpc: "2.0", id: 2, result: { ok: true } });
		assert.equal(frames[2].msg.method, "bye");
		assert.equal(frames[2].msg.id, undefined);
	}
});

test("the id comes first on the line", () => {
	const [line] = encode({ method: "m", params: { big: "x" }, id: 9 });
	assert.match(line.toString(), /^\{"jsonrpc":"2.0","id":9,/);
});

test("bad input throws", () => {
	assert.throws(() => new Decoder().push(Buffer.from("not json\n")));
	assert.throws(() => new Decoder().push(Buffer.from('{"jsonrpc":"2.0","id":1,"result":1,"bulk":-3}\n')));
	assert.throws(() => new Decoder(8).push(Buffer.from("0123456789")));
});
