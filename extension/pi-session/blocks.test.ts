import assert from "node:assert/strict";
import { test } from "node:test";
import { packBlocks, unpackBlocks } from "./blocks.ts";

test("text blocks travel as bulk bytes and come back", () => {
	const content = [{ type: "text", text: "héllo\n" }, { type: "image", data: "AAAA", mimeType: "image/png" }, { type: "text", text: "" }];
	const { blocks, bulk } = packBlocks(content);
	assert.deepEqual(blocks, [{ type: "text", bytes: 7 }, content[1], { type: "text", bytes: 0 }]);
	assert.equal(bulk.toString("utf8"), "héllo\n");
	assert.deepEqual(unpackBlocks(blocks, bulk), content);
	assert.throws(() => unpackBlocks([{ type: "text", bytes: 9 }], bulk));
	assert.throws(() => unpackBlocks([{ type: "text", bytes: 1 }], bulk));
});
