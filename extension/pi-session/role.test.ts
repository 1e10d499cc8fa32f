import assert from "node:assert/strict";
import { test } from "node:test";
import { claimRole, isHeadless, isSubagentName, releaseRole } from "./role.ts";

test("the first session is main, concurrent ones are children, a switch stays main", () => {
	const g = {};
	const main = {}, child = {}, next = {};
	assert.equal(claimRole(main, g), "main");
	assert.equal(claimRole(child, g), "child");
	assert.equal(claimRole(main, g), "main");
	releaseRole(child, g); // a child's shutdown frees nothing
	assert.equal(claimRole(child, g), "child");
	releaseRole(main, g); // /new, /resume, fork: shutdown then start
	assert.equal(claimRole(next, g), "main");
});

test("subagent names and headless modes", () => {
	const names: [string | undefined, boolean][] = [
		["review#0a1b2c3d", true],
		["review#0A1B2C3D", true],
		["review#0a1b2c3", false], // 7 digits
		["review#0a1b2c3dd", false], // 9 digits
		["review", false],
		[undefined, false],
	];
	for (const [name, want] of names) assert.equal(isSubagentName(name), want, String(name));
	assert.deepEqual(["tui", "rpc", "print", "json"].map(isHeadless), [false, false, true, true]);
});
